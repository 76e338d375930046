package kustomize

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"regexp"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/sandbox"
	"github.com/rukpak/rukpak/pkg/failure"
)

// mountDir is where the bundle lands in the in-memory file system. It is
// not "/" so that a path leaving the bundle ("../x" at the root) finds
// nothing instead of a file of the bundle.
const mountDir = "/bundle"

// Limits bound what building a bundle's untrusted content may cost. The
// caller owns the numbers (the plain format passes its own limits); every
// field must be positive.
type Limits struct {
	// MaxFileBytes is the largest file of the bundle, in bytes.
	MaxFileBytes int64
	// MaxTotalBytes is the most all files of the bundle may hold together,
	// in bytes. It also bounds the bytes the build reads, counting a base
	// once per kustomization that uses it.
	MaxTotalBytes int64
	// MaxFiles is the most files (directories excluded) the bundle may
	// have. It also bounds the files the build reads, counting a base once
	// per kustomization that uses it.
	MaxFiles int
}

// validate returns an error, not the bundle's fault, if a limit is unset.
func (l Limits) validate() error {
	if l.MaxFileBytes <= 0 || l.MaxTotalBytes <= 0 || l.MaxFiles <= 0 {
		return fmt.Errorf("kustomize: every limit must be positive, got %+v", l)
	}
	return nil
}

// FileNames returns the names of a kustomization file, in the order
// kustomize looks for them.
func FileNames() []string {
	return konfig.RecognizedKustomizationFileNames()
}

// Find returns the name of the kustomization file at the root of fsys, or
// "" if it has none. Any entry of that name that is not a directory counts,
// so that Build refuses a symlink instead of the bundle silently being
// read another way.
func Find(fsys fs.FS) (string, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return "", fmt.Errorf("reading the bundle root: %w", err)
	}
	present := make(map[string]bool, len(entries))
	for _, e := range entries {
		if !e.IsDir() {
			present[e.Name()] = true
		}
	}
	for _, name := range FileNames() {
		if present[name] {
			return name, nil
		}
	}
	return "", nil
}

// Build builds the kustomization at the root of fsys and returns its
// resources in kustomize's output order: the order of `kustomize build`,
// or the kustomization's sortOptions. Errors that are the bundle's fault
// are *failure.Error; others (reading fsys, cancellation) are not.
func Build(ctx context.Context, fsys fs.FS, limits Limits) ([]*unstructured.Unstructured, error) {
	if err := limits.validate(); err != nil {
		return nil, err
	}
	b := newBundle(ctx, fsys, limits)
	if err := check(b, limits); err != nil {
		return nil, err
	}
	if err := b.err(); err != nil {
		return nil, err
	}
	// Run in a sandbox child, a build that blows up is named.
	sandbox.Describe("building kustomization " + rootFile(b))
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("building kustomization: %w", err)
	}
	m, err := run(fileSystem{b: b}, rootFile(b))
	// A read the bundle refused (or could not do) is why the build failed,
	// whatever kustomize made of it; and it fails the build even if
	// kustomize went on without the file.
	if readErr := b.err(); readErr != nil {
		return nil, readErr
	}
	if err != nil {
		return nil, err
	}
	return toUnstructured(m)
}

// options returns the krusty options for untrusted content: files only
// from the kustomization's directory and below, builtin plugins only,
// no Helm, no functions, and kustomize's default output order.
func options() *krusty.Options {
	return &krusty.Options{
		Reorder:           krusty.ReorderOptionUnspecified,
		AddManagedbyLabel: false,
		LoadRestrictions:  types.LoadRestrictionsRootOnly,
		PluginConfig: &types.PluginConfig{
			PluginRestrictions: types.PluginRestrictionsBuiltinsOnly,
			BpLoadingOptions:   types.BploUseStaticallyLinked,
			FnpLoadingOptions:  types.FnPluginLoadingOptions{EnableExec: false, Network: false},
			HelmConfig:         types.HelmConfig{Enabled: false},
		},
	}
}

// run builds the kustomization at mountDir, whose file is root.
func run(fSys filesys.FileSystem, root string) (m resmap.ResMap, err error) {
	defer recovered(root, &err)
	m, err = krusty.MakeKustomizer(options()).Run(fSys, mountDir)
	if err != nil {
		return nil, failure.New(v1alpha2.ReasonRenderFailed, "%s: kustomize build failed: %s", root, bundlePaths(err.Error()))
	}
	return m, nil
}

// recovered, deferred, turns a panic of kustomize on hostile input into a
// RenderFailed failure about the kustomization file root in *err.
func recovered(root string, err *error) {
	if r := recover(); r != nil {
		*err = failure.New(v1alpha2.ReasonRenderFailed, "%s: kustomize build failed: %v", root, r)
	}
}

// mountFile and mountRoot match mountDir in kustomize's messages, with the
// slash after it or alone, where a path starts (after what cannot be part
// of a path) and is kept in group 1.
var (
	mountFile = regexp.MustCompile(`(^|[^\w.\-/])` + regexp.QuoteMeta(mountDir) + `/`)
	mountRoot = regexp.MustCompile(`(^|[^\w.\-/])` + regexp.QuoteMeta(mountDir) + `\b`)
)

// bundlePaths turns the in-memory paths of msg into paths of the bundle:
// "/bundle/base/cm.yaml" into "base/cm.yaml", "/bundle" into ".".
func bundlePaths(msg string) string {
	msg = mountFile.ReplaceAllString(msg, "${1}")
	return mountRoot.ReplaceAllString(msg, "${1}.")
}

// toUnstructured converts the built resources through JSON, so that
// numbers are int64 or float64 as unstructured objects require.
func toUnstructured(m resmap.ResMap) ([]*unstructured.Unstructured, error) {
	resources := m.Resources()
	objs := make([]*unstructured.Unstructured, 0, len(resources))
	for _, r := range resources {
		data, err := r.MarshalJSON()
		if err != nil {
			return nil, failure.New(v1alpha2.ReasonRenderFailed, "kustomize output %s: %v", r.CurId(), err)
		}
		var obj map[string]any
		if err := utiljson.Unmarshal(data, &obj); err != nil {
			return nil, failure.New(v1alpha2.ReasonRenderFailed, "kustomize output %s: %v", r.CurId(), err)
		}
		if obj == nil {
			return nil, failure.New(v1alpha2.ReasonRenderFailed, "kustomize output %s: %v", r.CurId(),
				errors.New("not an object"))
		}
		objs = append(objs, &unstructured.Unstructured{Object: obj})
	}
	return objs, nil
}
