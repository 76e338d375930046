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
	"encoding/json"
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
	// Release says which install of the release this render is for (Helm's
	// .Release.IsInstall, .IsUpgrade and .Revision). The zero value is the
	// first install, revision 1.
	Release Release `json:"release"`
	// Lookups are the answers to the cluster reads (Helm's lookup) known
	// so far, by LookupQuery.Key: the object, a list of objects, or
	// LookupNotFound. nil means rendering offline (rukpakctl render): every
	// lookup finds nothing, as in helm template, and the format never asks.
	// A non-nil map, even an empty one, means the caller answers lookups: a
	// render that reads a query the map lacks fails with *LookupsNeeded
	// naming it, and the caller answers it and renders again (see
	// Format.Objects). Formats that never read the cluster ignore it.
	//
	// It has no omitempty: an empty map must reach a sandboxed child as
	// {}, not as nil.
	Lookups map[string]json.RawMessage `json:"lookups"`
}

// Release says which install of a release a render is for. The zero value
// is the first install (revision 1), what a render without a release
// history (rukpakctl render) shows.
type Release struct {
	// IsUpgrade is set when an earlier revision of the release was
	// installed: the render is an upgrade (Helm's .Release.IsUpgrade; its
	// .Release.IsInstall is the opposite).
	IsUpgrade bool `json:"isUpgrade,omitempty"`
	// Revision is the revision's number, from 1 (Helm's
	// .Release.Revision); 0 means 1.
	Revision int `json:"revision,omitempty"`
}

// RevisionOrFirst returns Revision, or 1 when it is not set.
func (r Release) RevisionOrFirst() int {
	if r.Revision < 1 {
		return 1
	}
	return r.Revision
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
	//
	// A format whose content reads the cluster (Helm's lookup) never reads
	// it itself: with a non-nil Config.Lookups that lacks the answer to a
	// query the content makes, Objects returns a *LookupsNeeded naming
	// every such query of the render, instead of objects or of the error
	// an empty answer may have caused; the caller answers them, adds the
	// answers to Config.Lookups and calls Objects again.
	Objects(ctx context.Context, fsys fs.FS, cfg Config) ([]*unstructured.Unstructured, error)
}
