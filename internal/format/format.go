// Package format defines how a provisioner turns an unpacked bundle (an
// fs.FS) into the objects it installs. Each bundle format (plain+v0, and the
// registry+v1 and Helm formats later issues add) implements Format in a
// package of its own.
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
}

// Format turns unpacked content into objects.
type Format interface {
	// Objects returns the bundle's objects in apply order. Content that is
	// the bundle's fault (invalid YAML, no objects, duplicates) is reported
	// as a *failure.Error with reason InvalidContent and a message naming
	// the file. Objects may lack a namespace; the apply engine places
	// namespaced ones in the install namespace.
	Objects(ctx context.Context, fsys fs.FS, cfg Config) ([]*unstructured.Unstructured, error)
}
