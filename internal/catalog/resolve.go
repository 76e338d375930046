package catalog

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/rukpak/rukpak/internal/versionrange"
)

// Query says which bundle of a package to install.
type Query struct {
	// Package names the package.
	Package string
	// Channels limits the bundles to those of these channels; empty
	// means any channel of the package.
	Channels []string
	// Range limits the versions (a pre-release only when the range names
	// one, as versionrange reads a range); empty means any version, as
	// OLM v1 reads no range.
	Range string
	// Installed is the bundle installed now, by name, if any.
	Installed string
	// AnyEdge allows an upgrade (or a downgrade) to any bundle of the
	// query, not only along the catalog's edges from Installed.
	AnyEdge bool
}

// Why says why a bundle of the package is not the one a query selects.
type Why string

// The reasons a bundle is passed over.
const (
	// WhyNotInChannel: the bundle is in none of the query's channels.
	WhyNotInChannel Why = "NotInChannel"
	// WhyOutOfRange: the bundle's version is out of the query's range.
	WhyOutOfRange Why = "OutOfRange"
	// WhyNotAnEdge: no upgrade edge leads from the installed bundle to it.
	WhyNotAnEdge Why = "NotOnUpgradeEdge"
	// WhyOlder: a newer bundle (or one not deprecated) is selected.
	WhyOlder Why = "NewerSelected"
	// WhySelected: it is the selected bundle.
	WhySelected Why = "Selected"
)

// Candidate is one bundle of the package and what the query made of it.
type Candidate struct {
	Bundle   *Bundle
	Channels []string
	Why      Why
}

// Result is a query's answer: the selected bundle (nil when none
// qualifies) and every bundle of the package, newest first, with the
// reason it was or was not selected.
type Result struct {
	Selected   *Bundle
	Candidates []Candidate
}

// Resolve selects the bundle of q.Package to install: of the bundles in
// q's channels (any channel when none is named) whose version is in
// q.Range, and — unless q.AnyEdge — that are q.Installed or one of its
// successors in those channels, the newest that is not deprecated, else
// the newest. A package, channel or installed bundle the catalog does not
// have is an error; no qualifying bundle is not (Result.Selected is nil).
func (c *Catalog) Resolve(q Query) (Result, error) {
	p := c.Packages[q.Package]
	if p == nil {
		return Result{}, fmt.Errorf("package %q is not in the catalog", q.Package)
	}
	channels := q.Channels
	if len(channels) == 0 {
		channels = p.ChannelNames()
	}
	for _, name := range channels {
		if p.Channels[name] == nil {
			return Result{}, fmt.Errorf("package %q has no channel %q (it has %s)", q.Package, name, strings.Join(p.ChannelNames(), ", "))
		}
	}
	var rng *versionrange.Range
	if q.Range != "" {
		r, err := versionrange.Parse(q.Range)
		if err != nil {
			return Result{}, err
		}
		rng = &r
	}
	var installed *Bundle
	if q.Installed != "" {
		installed = p.Bundles[q.Installed]
		if installed == nil && !q.AnyEdge {
			return Result{}, fmt.Errorf("the installed bundle %q is not in package %q of the catalog: no upgrade edge can be followed from it", q.Installed, q.Package)
		}
	}
	inChannels := map[string][]string{}
	successors := map[string]bool{}
	for _, name := range channels {
		for _, e := range p.Channels[name].Entries {
			inChannels[e.Name] = append(inChannels[e.Name], name)
			if installed != nil && upgradesFrom(e, installed) {
				successors[e.Name] = true
			}
		}
	}

	var res Result
	for _, b := range sortedBundles(p) {
		cand := Candidate{Bundle: b, Channels: inChannels[b.Name]}
		switch {
		case len(cand.Channels) == 0:
			cand.Why = WhyNotInChannel
		case rng != nil && !rng.Includes(b.Version):
			cand.Why = WhyOutOfRange
		case installed != nil && !q.AnyEdge && b.Name != installed.Name && !successors[b.Name]:
			cand.Why = WhyNotAnEdge
		default:
			cand.Why = WhyOlder
		}
		res.Candidates = append(res.Candidates, cand)
	}
	// The newest qualifying bundle that is not deprecated, else the newest.
	pick := -1
	for i, cand := range res.Candidates {
		if cand.Why != WhyOlder {
			continue
		}
		if pick < 0 {
			pick = i
		}
		if cand.Bundle.Deprecated == "" {
			pick = i
			break
		}
	}
	if pick >= 0 {
		res.Candidates[pick].Why = WhySelected
		res.Selected = res.Candidates[pick].Bundle
	}
	return res, nil
}

// upgradesFrom tells whether entry e is an upgrade edge from installed:
// it replaces it, skips it, or its skipRange includes its version.
func upgradesFrom(e Entry, installed *Bundle) bool {
	if e.Replaces == installed.Name || slices.Contains(e.Skips, installed.Name) {
		return true
	}
	if e.SkipRange == "" {
		return false
	}
	c, err := parseSkipRange(e.SkipRange)
	return err == nil && c.Check(installed.Version)
}

// parseSkipRange reads a skipRange, which includes the pre-releases in
// it (as OLM reads skipRange).
func parseSkipRange(s string) (*semver.Constraints, error) {
	c, err := semver.NewConstraint(s)
	if err != nil {
		return nil, fmt.Errorf("skipRange %q: %w", s, err)
	}
	c.IncludePrerelease = true
	return c, nil
}

// sortedBundles returns p's bundles, newest version first (by name for
// equal versions).
func sortedBundles(p *Package) []*Bundle {
	out := make([]*Bundle, 0, len(p.Bundles))
	for _, b := range p.Bundles {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool {
		if c := out[i].Version.Compare(out[j].Version); c != 0 {
			return c > 0
		}
		return out[i].Name < out[j].Name
	})
	return out
}
