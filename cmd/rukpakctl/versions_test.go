package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	repov1 "helm.sh/helm/v4/pkg/repo/v1"

	"github.com/rukpak/rukpak/internal/catalog"
)

func TestVersionStates(t *testing.T) {
	charts := func(versions ...string) []published {
		var out []*repov1.ChartVersion
		for _, v := range versions {
			removed := strings.HasSuffix(v, "!")
			v = strings.TrimSuffix(v, "!")
			out = append(out, &repov1.ChartVersion{Metadata: &chart.Metadata{Name: "c", Version: v}, Removed: removed})
		}
		return chartVersions(out)
	}
	tests := []struct {
		name      string
		published []published
		f         followed
		want      []string // "version: states"
	}{
		{name: "installed is the newest in range",
			published: charts("1.0.0", "1.1.0", "2.0.0", "1.2.0-rc.1", "latest"),
			f:         followed{constraint: "1.x", installed: "1.1.0", selected: "1.1.0"},
			want:      []string{"2.0.0: out of range", "1.2.0-rc.1: out of range", "1.1.0: installed, newest in range", "1.0.0: in range"}},
		{name: "a newer one awaits approval",
			published: charts("1.0.0", "1.1.0"),
			f:         followed{constraint: "1.x", installed: "1.0.0", selected: "1.1.0", awaiting: true},
			want:      []string{"1.1.0: awaiting approval, newest in range", "1.0.0: installed, in range"}},
		{name: "a newer one failed",
			published: charts("1.0.0", "1.1.0"),
			f:         followed{constraint: "1.x", installed: "1.0.0", selected: "1.1.0", failed: "1.1.0"},
			want:      []string{"1.1.0: failed before, newest in range", "1.0.0: installed, in range"}},
		{name: "the installed one was removed",
			published: charts("1.0.0!", "0.9.0"),
			f:         followed{installed: "1.0.0", selected: "1.0.0"},
			want:      []string{"1.0.0: installed, removed from the index", "0.9.0: in range"}},
		{name: "tags: v-prefixed, not versions left out",
			published: tagVersions([]string{"v1.0.0", "v1.1.0", "latest", "v2.0.0"}),
			f:         followed{constraint: ">=1 <2", installed: "v1.0.0", selected: "v1.1.0"},
			want:      []string{"v2.0.0: out of range", "v1.1.0: newest in range", "v1.0.0: installed, in range"}},
		{name: "tags: the installed tag deleted",
			published: tagVersions([]string{"1.0.0"}),
			f:         followed{constraint: "1.x", installed: "1.2.0", selected: "1.2.0"},
			want:      []string{"1.2.0: installed, no longer published", "1.0.0: in range"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, err := versionStates(tt.published, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rows {
				got = append(got, r.version+": "+strings.Join(r.states, ", "))
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
	if _, err := versionStates(nil, followed{constraint: ">>1"}); err == nil {
		t.Error("a bad constraint was accepted")
	}
}

// TestCatalogStates: the bundles of the query's channels, each with what
// the resolution from the installed bundle made of it.
func TestCatalogStates(t *testing.T) {
	bundle := func(version string, deprecated bool) *catalog.Bundle {
		b := &catalog.Bundle{Name: "op.v" + version, Package: "op", Version: semver.MustParse(version)}
		if deprecated {
			b.Deprecated = "no longer supported"
		}
		return b
	}
	cand := func(version string, why catalog.Why, deprecated bool) catalog.Candidate {
		return catalog.Candidate{Bundle: bundle(version, deprecated), Channels: []string{"stable"}, Why: why}
	}
	tests := []struct {
		name string
		res  catalog.Result
		f    followed
		want []string // "version bundle: states"
	}{
		{name: "the newest reachable is selected, one not on an edge is passed over",
			res: catalog.Result{Candidates: []catalog.Candidate{
				cand("2.0.0", catalog.WhyOutOfRange, false),
				cand("1.3.0", catalog.WhyNotAnEdge, false),
				cand("1.2.0", catalog.WhySelected, false),
				cand("1.1.0", catalog.WhyOlder, false),
				{Bundle: bundle("1.0.5", false), Why: catalog.WhyNotInChannel},
			}},
			f: followed{installed: "op.v1.1.0", selected: "op.v1.2.0"},
			want: []string{"2.0.0 op.v2.0.0: out of range", "1.3.0 op.v1.3.0: no edge from installed",
				"1.2.0 op.v1.2.0: newest reachable", "1.1.0 op.v1.1.0: installed, in range"}},
		{name: "awaiting approval, failed, deprecated",
			res: catalog.Result{Candidates: []catalog.Candidate{
				cand("1.3.0", catalog.WhyOlder, false),
				cand("1.2.0", catalog.WhySelected, false),
				cand("1.1.0", catalog.WhyOlder, true),
			}},
			f: followed{installed: "op.v1.1.0", selected: "op.v1.2.0", failed: "op.v1.3.0", awaiting: true},
			want: []string{"1.3.0 op.v1.3.0: failed before, in range", "1.2.0 op.v1.2.0: awaiting approval, newest reachable",
				"1.1.0 op.v1.1.0: installed, in range, deprecated"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, r := range catalogStates(tt.res, tt.f) {
				got = append(got, r.version+" "+r.bundle+": "+strings.Join(r.states, ", "))
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
