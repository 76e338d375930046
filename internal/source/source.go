// Package source fetches bundle content. Each source type (image, git,
// http, helmRepository, catalog, configMaps, upload) implements Source in
// a package of its own; a Registry dispatches on BundleSource.Type and
// composes several sources into one unpacked tree.
package source

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// Source fetches one kind of source.
type Source interface {
	// Resolve returns src with every floating reference pinned (content
	// digests, image digests, commits), so that the pinned source always
	// yields the same content. A source whose pin is set already (an image
	// digest, a resolved commit, an HTTP sha256) is returned as it is,
	// without any network request.
	Resolve(ctx context.Context, src v1alpha2.BundleSource) (v1alpha2.BundleSource, error)
	// Unpack writes the content of the pinned source src into dir, an
	// existing empty directory. It must verify the content against the pins.
	Unpack(ctx context.Context, src v1alpha2.BundleSource, dir string) error
}

// Floating is implemented by sources whose unpinned form must be looked up
// over the network (an image tag, a git branch or tag, a range of image or
// git tags, an HTTP URL without sha256). Such a source is re-resolved only every pollInterval.
type Floating interface {
	// Floating reports whether src (as the user wrote it) needs a network
	// lookup to be pinned.
	Floating(src v1alpha2.BundleSource) bool
}

// Successor is implemented by sources whose selection depends on what is
// installed: a catalog source follows upgrade edges from the installed
// bundle. Registry.ResolveFrom calls it instead of Resolve for a source
// whose installed counterpart it is given.
type Successor interface {
	// ResolveFrom is Resolve for src when installed (the pinned source
	// of the same index in the installed revision, never nil) is what is
	// installed now.
	ResolveFrom(ctx context.Context, src v1alpha2.BundleSource, installed *v1alpha2.BundleSource) (v1alpha2.BundleSource, error)
}

// Forward is implemented by sources that select one of several published
// versions (a Helm repository's range): given the same source as pinned
// last time, they never select an older version than that one, so that a
// version removed from where it was published stays the selected one and
// nothing is downgraded by itself.
type Forward interface {
	// ResolveForward is Resolve of src, whose last pin, of the same spec,
	// is previous.
	ResolveForward(ctx context.Context, src, previous v1alpha2.BundleSource) (v1alpha2.BundleSource, error)
}

// Registry is the set of sources a manager can read, by type.
type Registry map[v1alpha2.SourceType]Source

// Floating reports whether any of srcs is floating.
func (r Registry) Floating(srcs []v1alpha2.BundleSource) bool {
	for i := range srcs {
		if f, ok := r[srcs[i].Type].(Floating); ok && f.Floating(srcs[i]) {
			return true
		}
	}
	return false
}

func (r Registry) get(t v1alpha2.SourceType) (Source, error) {
	s, ok := r[t]
	if !ok {
		return nil, failure.New(v1alpha2.ReasonUnsupportedSource, "source type %q is not supported by this manager", t)
	}
	return s, nil
}

// Resolve pins every source, in order. previous are the sources as pinned
// last time (a BundleDeployment's status.resolvedSources); when reuse is
// set (their pins are still fresh), a floating source whose spec has not
// changed keeps its previous pin instead of being looked up again, and a
// Forward source whose spec has not changed is resolved from its previous
// pin. It is ResolveFrom with nothing installed.
func (r Registry) Resolve(ctx context.Context, srcs, previous []v1alpha2.BundleSource, reuse bool) ([]v1alpha2.BundleSource, error) {
	return r.ResolveFrom(ctx, srcs, previous, reuse, nil)
}

// ResolveFrom is Resolve given installed, the pinned sources of the
// installed revision (nil when nothing is installed): a source that is a
// Successor and whose installed counterpart (same index, same type) exists
// is resolved from it, so that it can follow upgrade edges.
func (r Registry) ResolveFrom(ctx context.Context, srcs, previous []v1alpha2.BundleSource, reuse bool, installed []v1alpha2.BundleSource) ([]v1alpha2.BundleSource, error) {
	out := make([]v1alpha2.BundleSource, 0, len(srcs))
	for i := range srcs {
		s, err := r.get(srcs[i].Type)
		if err != nil {
			return nil, err
		}
		src := srcs[i]
		if f, ok := s.(Floating); ok && reuse && i < len(previous) && f.Floating(src) && samePinned(src, previous[i]) {
			src = previous[i]
		}
		var pinned v1alpha2.BundleSource
		succ, isSucc := s.(Successor)
		fwd, isFwd := s.(Forward)
		switch {
		case isSucc && i < len(installed) && installed[i].Type == src.Type:
			pinned, err = succ.ResolveFrom(ctx, src, &installed[i])
		case isFwd && i < len(previous) && samePinned(src, previous[i]):
			pinned, err = fwd.ResolveForward(ctx, src, previous[i])
		default:
			pinned, err = s.Resolve(ctx, src)
		}
		if err != nil {
			return nil, fmt.Errorf("source %d (%s): %w", i, srcs[i].Type, err)
		}
		out = append(out, pinned)
	}
	return out, nil
}

// samePinned reports whether pinned is spec with only pins added, that is,
// a resolution of this very spec.
func samePinned(spec, pinned v1alpha2.BundleSource) bool {
	p := pinned.DeepCopy()
	if spec.Image != nil && p.Image != nil && spec.Image.Digest == "" {
		p.Image.Digest, p.Image.ResolvedTag = "", ""
	}
	if spec.Git != nil && p.Git != nil && spec.Git.ResolvedCommit == "" {
		p.Git.ResolvedCommit, p.Git.ResolvedTag = "", ""
	}
	if spec.HTTP != nil && p.HTTP != nil && spec.HTTP.SHA256 == "" {
		p.HTTP.SHA256 = ""
	}
	if h := spec.HelmRepository; h != nil && p.HelmRepository != nil && h.ResolvedVersion == "" {
		p.HelmRepository.ResolvedVersion, p.HelmRepository.ResolvedURL, p.HelmRepository.SHA256 = "", "", ""
	}
	if c := spec.Catalog; c != nil && p.Catalog != nil && c.ResolvedBundle == "" {
		p.Catalog.ResolvedBundle, p.Catalog.ResolvedVersion, p.Catalog.ResolvedImage, p.Catalog.CatalogDigest = "", "", "", ""
	}
	return equality.Semantic.DeepEqual(&spec, p)
}
