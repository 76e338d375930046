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
	"github.com/rukpak/rukpak/internal/versionrange"
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

// Versioned is implemented by sources that select one of several
// published versions (a range of a Helm repository's chart versions, of an
// image's or a git repository's tags). Registry.ResolveFrom never lets
// such a source select, by itself, an older version than the one pinned
// last for the same spec: a version removed from where it was published
// stays selected, and the Resolution says it is no longer published.
type Versioned interface {
	// SelectedVersion is the version pinned, a pin of this source,
	// selected from a range; "" when it selected none (no range, or a pin
	// not complete enough to install again).
	SelectedVersion(pinned v1alpha2.BundleSource) string
}

// Reporter is implemented by sources that select one of several
// published versions but are not Versioned: they may select an older
// version by themselves, and what they select is theirs to choose (a
// catalog follows upgrade edges, and prefers an older bundle to a newer
// deprecated one). Their pins name the version for the status only.
type Reporter interface {
	// PinnedVersion is the version pinned, a pin of this source, names;
	// "" when it names none.
	PinnedVersion(pinned v1alpha2.BundleSource) string
}

// SelectedVersion is the version pinned, the pinned sources of one
// revision, selected: that of the first source that is Versioned or a
// Reporter and names one; "" when none does. It is what a
// BundleDeployment's status.installedVersion and newestVersion show.
func (r Registry) SelectedVersion(pinned []v1alpha2.BundleSource) string {
	for i := range pinned {
		s := r[pinned[i].Type]
		if v, ok := s.(Versioned); ok {
			if version := v.SelectedVersion(pinned[i]); version != "" {
				return version
			}
		}
		if v, ok := s.(Reporter); ok {
			if version := v.PinnedVersion(pinned[i]); version != "" {
				return version
			}
		}
	}
	return ""
}

// Resolution is what resolving sources gave.
type Resolution struct {
	// Pinned are the sources, pinned, in order.
	Pinned []v1alpha2.BundleSource
	// Unpublished are the versions pinned before and kept, in the order
	// of the sources, because their range now selects an older one: they
	// are no longer published.
	Unpublished []Unpublished
}

// Unpublished is a version kept because it is no longer published.
type Unpublished struct {
	// Source is the source's index.
	Source int
	// Version is the version kept; Newest the newest of the range that is
	// published now.
	Version, Newest string
}

// String says what u means, for messages.
func (u Unpublished) String() string {
	return fmt.Sprintf("source %d: version %s is no longer published (the newest in range is %s); it stays selected, never downgraded by itself",
		u.Source, u.Version, u.Newest)
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
// changed keeps its previous pin instead of being looked up again. It is
// ResolveFrom with nothing installed.
func (r Registry) Resolve(ctx context.Context, srcs, previous []v1alpha2.BundleSource, reuse bool) ([]v1alpha2.BundleSource, error) {
	res, err := r.ResolveFrom(ctx, srcs, previous, reuse, nil)
	return res.Pinned, err
}

// ResolveFrom is Resolve given installed, the pinned sources of the
// installed revision (nil when nothing is installed): a source that is a
// Successor and whose installed counterpart (same index, same type) exists
// is resolved from it, so that it can follow upgrade edges. A Versioned
// source whose spec has not changed since previous never selects an
// older version than previous's (keptNewer).
func (r Registry) ResolveFrom(ctx context.Context, srcs, previous []v1alpha2.BundleSource, reuse bool, installed []v1alpha2.BundleSource) (Resolution, error) {
	res := Resolution{Pinned: make([]v1alpha2.BundleSource, 0, len(srcs))}
	for i := range srcs {
		s, err := r.get(srcs[i].Type)
		if err != nil {
			return Resolution{}, err
		}
		src := srcs[i]
		same := i < len(previous) && samePinned(src, previous[i])
		if f, ok := s.(Floating); ok && reuse && same && f.Floating(src) {
			src = previous[i]
		}
		var pinned v1alpha2.BundleSource
		if succ, ok := s.(Successor); ok && i < len(installed) && installed[i].Type == src.Type {
			pinned, err = succ.ResolveFrom(ctx, src, &installed[i])
		} else {
			pinned, err = s.Resolve(ctx, src)
		}
		if err != nil {
			return Resolution{}, fmt.Errorf("source %d (%s): %w", i, srcs[i].Type, err)
		}
		if v, ok := s.(Versioned); ok && same {
			if kept, newest := keptNewer(v, previous[i], pinned); kept {
				pinned = previous[i]
				res.Unpublished = append(res.Unpublished, Unpublished{Source: i, Version: v.SelectedVersion(pinned), Newest: newest})
			}
		}
		res.Pinned = append(res.Pinned, pinned)
	}
	return res, nil
}

// keptNewer reports whether previous, the last pin of a Versioned source,
// selected a newer version than pinned, this resolution of the same spec:
// then its version was removed from where it was published, and previous
// is kept. newest is pinned's version.
func keptNewer(v Versioned, previous, pinned v1alpha2.BundleSource) (kept bool, newest string) {
	was, now := v.SelectedVersion(previous), v.SelectedVersion(pinned)
	pv, err1 := versionrange.Version(was)
	nv, err2 := versionrange.Version(now)
	return err1 == nil && err2 == nil && pv.GreaterThan(nv), now
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
