package resolvecache

import (
	"context"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/source"
)

// shared is a Source whose resolutions of floating sources go through a
// Cache; all else is the wrapped source's.
type shared struct {
	inner source.Source
	cache *Cache
}

var (
	_ source.Source    = (*shared)(nil)
	_ source.Floating  = (*shared)(nil)
	_ source.Successor = (*shared)(nil)
	_ source.Versioned = (*shared)(nil)
	_ source.Reporter  = (*shared)(nil)
)

// Floating is the wrapped source's.
func (s *shared) Floating(src v1alpha2.BundleSource) bool {
	f, ok := s.inner.(source.Floating)
	return ok && f.Floating(src)
}

// Resolve answers a floating src from the cache; a pinned one is the
// wrapped source's to return as it is.
func (s *shared) Resolve(ctx context.Context, src v1alpha2.BundleSource) (v1alpha2.BundleSource, error) {
	if !s.Floating(src) {
		return s.inner.Resolve(ctx, src)
	}
	return s.cache.resolve(ctx, src, s.inner.Resolve)
}

// ResolveFrom is the wrapped source's: what it selects depends on what
// is installed, which differs between BundleDeployments (a catalog source
// keeps its own cache of the catalog). A source that is no Successor
// resolves as Resolve does.
func (s *shared) ResolveFrom(ctx context.Context, src v1alpha2.BundleSource, installed *v1alpha2.BundleSource) (v1alpha2.BundleSource, error) {
	if succ, ok := s.inner.(source.Successor); ok {
		return succ.ResolveFrom(ctx, src, installed)
	}
	return s.Resolve(ctx, src)
}

// SelectedVersion is the wrapped source's.
func (s *shared) SelectedVersion(pinned v1alpha2.BundleSource) string {
	if v, ok := s.inner.(source.Versioned); ok {
		return v.SelectedVersion(pinned)
	}
	return ""
}

// PinnedVersion is the wrapped source's.
func (s *shared) PinnedVersion(pinned v1alpha2.BundleSource) string {
	if v, ok := s.inner.(source.Reporter); ok {
		return v.PinnedVersion(pinned)
	}
	return ""
}

// Unpack is the wrapped source's.
func (s *shared) Unpack(ctx context.Context, src v1alpha2.BundleSource, dir string) error {
	return s.inner.Unpack(ctx, src, dir)
}
