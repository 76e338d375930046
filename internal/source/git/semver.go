package git

import (
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/protocol/packp"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/versionrange"
	"github.com/rukpak/rukpak/pkg/failure"
)

// tagPrefix is the prefix of the full names of tags.
const tagPrefix = "refs/tags/"

// selectTag returns the newest tag ar advertises that is a version in
// constraint. A constraint that does not parse is an UnpackFailed
// failure, no tag in it a SourceNotFound failure naming the constraint and
// the tags published.
func (r *remote) selectTag(ar *packp.AdvRefs, constraint string) (string, error) {
	rng, err := versionrange.Parse(constraint)
	if err != nil {
		return "", failure.New(v1alpha2.ReasonUnpackFailed, "repository %s: %v", r.name, err)
	}
	tags := make([]string, 0, len(ar.References))
	for name := range ar.References {
		if tag, ok := strings.CutPrefix(name, tagPrefix); ok {
			tags = append(tags, tag)
		}
	}
	sort.Strings(tags)
	best, ok := rng.Newest(tags)
	if !ok {
		return "", failure.New(v1alpha2.ReasonSourceNotFound, "repository %s has no tag in %q (%d tags published, %d of them versions)",
			r.name, constraint, len(tags), len(versionrange.Sort(tags)))
	}
	return best.Name, nil
}
