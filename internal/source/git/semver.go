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

// ResolveForward resolves src, and keeps previous, its last pin of the
// same spec, when the tag ref.semver selects now is an older version than
// previous's: a tag removed from the repository after it was selected
// stays selected, never downgraded by itself.
func (s *Source) ResolveForward(ctx context.Context, src, previous v1alpha2.BundleSource) (v1alpha2.BundleSource, error) {
	pinned, err := s.Resolve(ctx, src)
	if err != nil || previous.Git == nil || pinned.Git == nil || previous.Git.ResolvedCommit == "" {
		return pinned, err
	}
	prev, err1 := versionrange.Version(previous.Git.ResolvedTag)
	now, err2 := versionrange.Version(pinned.Git.ResolvedTag)
	if err1 == nil && err2 == nil && prev.GreaterThan(now) {
		return previous, nil
	}
	return pinned, nil
}
