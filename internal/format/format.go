// Package format defines how a provisioner turns an unpacked bundle (an
// fs.FS) into the objects it installs. Each bundle format (plain+v0,
// registry+v1, Helm) implements Format in a package of its own.
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
	// as a *failure.Error with a reason of api/v1alpha2 (InvalidContent,
	// RenderFailed, UnsupportedInstallMode, UnsupportedFeature,
	// InvalidConfig) and a message naming the file or object. Objects may
	// lack a namespace; the apply engine places namespaced ones in the
	// install namespace.
	Objects(ctx context.Context, fsys fs.FS, cfg Config) ([]*unstructured.Unstructured, error)
}
