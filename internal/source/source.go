// Package source fetches bundle content. Each source type (configMaps, and
// the image, git, http and upload types later issues add) implements Source
// in a package of its own; a Registry dispatches on BundleSource.Type and
// composes several sources into one unpacked tree.
package source

import (
	"context"
	"fmt"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/failure"
)

// Source fetches one kind of source.
type Source interface {
	// Resolve returns src with every floating reference pinned (content
	// digests, image digests, commits), so that the pinned source always
	// yields the same content.
	Resolve(ctx context.Context, src v1alpha2.BundleSource) (v1alpha2.BundleSource, error)
	// Unpack writes the content of the pinned source src into dir, an
	// existing empty directory. It must verify the content against the pins.
	Unpack(ctx context.Context, src v1alpha2.BundleSource, dir string) error
}

// Registry is the set of sources a manager can read, by type.
type Registry map[v1alpha2.SourceType]Source

func (r Registry) get(t v1alpha2.SourceType) (Source, error) {
	s, ok := r[t]
	if !ok {
		return nil, failure.New(v1alpha2.ReasonUnsupportedSource, "source type %q is not supported by this manager", t)
	}
	return s, nil
}

// Resolve pins every source, in order.
func (r Registry) Resolve(ctx context.Context, srcs []v1alpha2.BundleSource) ([]v1alpha2.BundleSource, error) {
	out := make([]v1alpha2.BundleSource, 0, len(srcs))
	for i := range srcs {
		s, err := r.get(srcs[i].Type)
		if err != nil {
			return nil, err
		}
		pinned, err := s.Resolve(ctx, srcs[i])
		if err != nil {
			return nil, fmt.Errorf("source %d (%s): %w", i, srcs[i].Type, err)
		}
		out = append(out, pinned)
	}
	return out, nil
}
