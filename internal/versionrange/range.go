// Package versionrange selects versions by a semantic-version constraint,
// the way Helm reads a chart version: an exact version ("1.2.3") matches
// that version only, a range ("4.x", "^1.2", ">=1.2 <2", "~1.2.0 || 2.x")
// matches every version it includes, and a pre-release matches only a
// range that names a pre-release itself (">=1.0.0-0"). Versions are
// strict semantic versions with an optional leading "v" (image and git
// tags often carry one); anything else ("latest", "1.2", "sha-1f2e") is
// not a version and never matches, so a floating tag is never taken for
// the release it points at.
package versionrange

import (
	"fmt"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// Range is a parsed constraint. Its zero value matches nothing.
type Range struct {
	text  string
	exact *semver.Version
	c     *semver.Constraints
}

// Parse reads a constraint: an exact version or a range in the syntax of
// github.com/Masterminds/semver/v3, which Helm uses.
func Parse(constraint string) (Range, error) {
	text := strings.TrimSpace(constraint)
	if text == "" {
		return Range{}, fmt.Errorf("an empty version constraint")
	}
	if !IsRange(text) {
		v, err := Version(text)
		if err != nil {
			return Range{}, fmt.Errorf("version %q: %w", text, err)
		}
		return Range{text: text, exact: v}, nil
	}
	c, err := semver.NewConstraint(text)
	if err != nil {
		return Range{}, fmt.Errorf("version constraint %q: %w", text, err)
	}
	return Range{text: text, c: c}, nil
}

// IsRange tells whether constraint names more than one version: it has
// an operator, a union, a hyphen range or a wildcard.
func IsRange(constraint string) bool {
	if strings.ContainsAny(constraint, "^~<>=!*,|") || strings.Contains(constraint, " - ") || strings.Contains(constraint, " ") {
		return true
	}
	core := constraint
	if i := strings.IndexAny(core, "-+"); i >= 0 {
		core = core[:i]
	}
	return strings.ContainsAny(core, "xX")
}

// Version reads a strict semantic version, with an optional leading "v".
func Version(s string) (*semver.Version, error) {
	v, err := semver.StrictNewVersion(strings.TrimPrefix(s, "v"))
	if err != nil {
		return nil, fmt.Errorf("not a semantic version: %w", err)
	}
	return v, nil
}

// String returns the constraint as it was written.
func (r Range) String() string { return r.text }

// Exact tells whether the constraint names one version.
func (r Range) Exact() bool { return r.exact != nil }

// Matches tells whether version s is in the range. Build metadata is
// ignored, as semantic versioning orders versions.
func (r Range) Matches(s string) bool {
	v, err := Version(s)
	if err != nil {
		return false
	}
	return r.Includes(v)
}

// Includes is Matches for a parsed version.
func (r Range) Includes(v *semver.Version) bool {
	switch {
	case r.exact != nil:
		return v.Equal(r.exact)
	case r.c != nil:
		return r.c.Check(v)
	}
	return false
}

// Candidate is one published version: its name as published (a tag, a
// chart version) and the version it reads as.
type Candidate struct {
	Name    string
	Version *semver.Version
}

// Sort returns the names that are versions, newest first, each with its
// version; names that are not versions are left out. Of two names of the
// same version ("v1.2.3" and "1.2.3"), the one without a "v" comes
// first; the order is otherwise that of the names.
func Sort(names []string) []Candidate {
	out := make([]Candidate, 0, len(names))
	for _, n := range names {
		if v, err := Version(n); err == nil {
			out = append(out, Candidate{Name: n, Version: v})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if c := out[i].Version.Compare(out[j].Version); c != 0 {
			return c > 0
		}
		if out[i].Version.Metadata() != out[j].Version.Metadata() {
			return out[i].Version.Metadata() > out[j].Version.Metadata()
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Newest returns the newest of names in r, and false when none is.
func (r Range) Newest(names []string) (Candidate, bool) {
	for _, c := range Sort(names) {
		if r.Includes(c.Version) {
			return c, true
		}
	}
	return Candidate{}, false
}
