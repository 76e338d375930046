package git

import (
	"context"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/protocol/packp"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/versionrange"
	"github.com/rukpak/rukpak/pkg/failure"
)

// tagPrefix is the prefix of the full names of tags.
const tagPrefix = "refs/tags/"

// Tags returns the tags the repository src names advertises now, sorted
// by name, read with src's credentials and TLS settings as Resolve reads
// them. It is for listing what a source with ref.semver follows
// (rukpakctl versions); it fetches no object.
func (s *Source) Tags(ctx context.Context, src v1alpha2.BundleSource) ([]string, error) {
	g, err := spec(src)
	if err != nil {
		return nil, err
	}
	r, err := s.connect(ctx, g)
	if err != nil {
		return nil, err
	}
	defer r.close()
	ar, err := r.advertise(ctx)
	if err != nil {
		return nil, err
	}
	return advertisedTags(ar), nil
}

// advertisedTags returns the tags ar advertises, sorted by name.
func advertisedTags(ar *packp.AdvRefs) []string {
	tags := make([]string, 0, len(ar.References))
	for name := range ar.References {
		if tag, ok := strings.CutPrefix(name, tagPrefix); ok {
			tags = append(tags, tag)
		}
	}
	sort.Strings(tags)
	return tags
}

// selectTag returns the newest tag ar advertises that is a version in
// constraint. A constraint that does not parse is an UnpackFailed
// failure, no tag in it a SourceNotFound failure naming the constraint and
// the tags published.
func (r *remote) selectTag(ar *packp.AdvRefs, constraint string) (string, error) {
	rng, err := versionrange.Parse(constraint)
	if err != nil {
		return "", failure.New(v1alpha2.ReasonUnpackFailed, "repository %s: %v", r.name, err)
	}
	tags := advertisedTags(ar)
	best, ok := rng.Newest(tags)
	if !ok {
		return "", failure.New(v1alpha2.ReasonSourceNotFound, "repository %s has no tag in %q (%d tags published, %d of them versions)",
			r.name, constraint, len(tags), len(versionrange.Sort(tags)))
	}
	return best.Name, nil
}

// SelectedVersion is the tag pinned selected by its ref's semver range,
// once pinned names its commit (source.Versioned: never downgraded by
// itself); "" for a ref without a range.
func (s *Source) SelectedVersion(pinned v1alpha2.BundleSource) string {
	g := pinned.Git
	if g == nil || g.Ref.Semver == "" || g.ResolvedCommit == "" {
		return ""
	}
	return g.ResolvedTag
}
