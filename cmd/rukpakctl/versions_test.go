package main

import (
	"reflect"
	"strings"
	"testing"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	repov1 "helm.sh/helm/v4/pkg/repo/v1"
)

func TestVersionStates(t *testing.T) {
	published := func(versions ...string) []*repov1.ChartVersion {
		var out []*repov1.ChartVersion
		for _, v := range versions {
			removed := strings.HasSuffix(v, "!")
			v = strings.TrimSuffix(v, "!")
			out = append(out, &repov1.ChartVersion{Metadata: &chart.Metadata{Name: "c", Version: v}, Removed: removed})
		}
		return out
	}
	tests := []struct {
		name      string
		published []*repov1.ChartVersion
		f         followed
		want      []string // "version: states"
	}{
		{name: "installed is the newest in range",
			published: published("1.0.0", "1.1.0", "2.0.0", "1.2.0-rc.1", "latest"),
			f:         followed{constraint: "1.x", installed: "1.1.0", selected: "1.1.0"},
			want:      []string{"2.0.0: out of range", "1.2.0-rc.1: out of range", "1.1.0: installed, newest in range", "1.0.0: in range"}},
		{name: "a newer one awaits approval",
			published: published("1.0.0", "1.1.0"),
			f:         followed{constraint: "1.x", installed: "1.0.0", selected: "1.1.0", awaiting: true},
			want:      []string{"1.1.0: awaiting approval, newest in range", "1.0.0: installed, in range"}},
		{name: "a newer one failed",
			published: published("1.0.0", "1.1.0"),
			f:         followed{constraint: "1.x", installed: "1.0.0", selected: "1.1.0", failed: "1.1.0"},
			want:      []string{"1.1.0: failed before, newest in range", "1.0.0: installed, in range"}},
		{name: "the installed one was removed",
			published: published("1.0.0!", "0.9.0"),
			f:         followed{installed: "1.0.0", selected: "1.0.0"},
			want:      []string{"1.0.0: installed, removed from the index", "0.9.0: in range"}},
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
