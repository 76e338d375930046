// Package format is the contract between a provisioner and the rukpak
// engine: a Format turns an unpacked bundle (an fs.FS, read-only) and its
// Config into the objects to install. rukpak's own formats (plain+v0,
// registry+v1, Helm) implement it, and so can a format outside this
// repository. Content that is the bundle's fault is reported as a
// *failure.Error (package github.com/rukpak/rukpak/pkg/failure), which
// the engine shows as the reason and message of the BundleDeployment's
// Installed condition.
package format

import (
	"context"
	"io/fs"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// Config is what a format needs to know besides the content.
type Config struct {
	// InstallNamespace is the BundleDeployment's installNamespace.
	InstallNamespace string
	// ReleaseName names the install (the BundleDeployment's name).
	ReleaseName string
	// Bundle is the format-specific spec.config; it may be nil.
	Bundle *v1alpha2.BundleConfig
	// Parameters are the spec.parameters of the ProvisionerClass (nil when
	// it sets none), for formats whose classes are configured there.
	Parameters map[string]any
	// Values are the Helm values to render with, already resolved by the
	// caller: spec.config.valuesFrom in order, then spec.config.values,
	// deep-merged (see package values). nil means none. Formats other than
	// Helm ignore them.
	Values map[string]any
	// Capabilities describe the cluster the objects are for; nil means
	// rendering without a cluster (rukpakctl render), where a format uses
	// its defaults.
	Capabilities *Capabilities
	// Redact are strings that must never appear in an error message: the
	// values read from Secrets (see values.Resolved.Secrets). Formats need
	// not know them; whoever runs a format (package sandboxed) replaces
	// them in its errors.
	Redact []string `json:"-"`
}

// Capabilities describe what the target cluster serves, for formats whose
// output depends on it (Helm's .Capabilities).
type Capabilities struct {
	// KubeVersion is the API server's version, e.g. "v1.36.3".
	KubeVersion string
	// APIVersions lists what the cluster serves, both as "group/version"
	// (or "v1" for the core group) and as "group/version/Kind".
	APIVersions []string
}

// Format turns unpacked content into objects.
type Format interface {
	// Objects returns the bundle's objects in apply order. Content that is
	// the bundle's fault (invalid YAML, no objects, duplicates) is reported
	// as a *failure.Error (failure.New) with a reason of api/v1alpha2
	// (InvalidContent, RenderFailed, UnsupportedInstallMode,
	// UnsupportedFeature, InvalidConfig) and a message naming the file or
	// object; any other error is taken as transient and retried. Objects may
	// lack a namespace; the apply engine places namespaced ones in the
	// install namespace.
	Objects(ctx context.Context, fsys fs.FS, cfg Config) ([]*unstructured.Unstructured, error)
}
