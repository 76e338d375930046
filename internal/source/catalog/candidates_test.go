//go:build integration

package catalog

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

// TestCandidates: Candidates reads the catalog the source names and says
// what the resolution from the installed bundle makes of every bundle of
// the package.
func TestCandidates(t *testing.T) {
	r := newRegistry(t)
	f := pushFixtures(t, r)
	s := newSource(WithWorkDir(t.TempDir()))
	tests := []struct {
		name      string
		channels  []string
		version   string
		installed string
		want      []string // "bundle: why"
		wantErr   string
	}{
		{name: "stable from 1.0.0: 1.1.0 is the only edge", channels: []string{"stable"}, installed: greeter100.name(),
			want: []string{"greeter.v2.0.0: NotInChannel", "greeter.v1.2.0: NotOnUpgradeEdge", "greeter.v1.1.0: Selected", "greeter.v1.0.0: NewerSelected"}},
		{name: "a range, nothing installed", version: "<1.2",
			want: []string{"greeter.v2.0.0: OutOfRange", "greeter.v1.2.0: OutOfRange", "greeter.v1.1.0: Selected", "greeter.v1.0.0: NewerSelected"}},
		{name: "an unknown channel", channels: []string{"nightly"}, wantErr: `package "greeter" has no channel "nightly"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := catalogSrc(f, "ops", "greeter")
			src.Catalog.Channels, src.Catalog.Version = tt.channels, tt.version
			res, err := s.Candidates(context.Background(), src, tt.installed)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one holding %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range res.Candidates {
				got = append(got, c.Bundle.Name+": "+string(c.Why))
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if res.Selected == nil || src.Catalog.ResolvedBundle != "" {
				t.Errorf("selected %v; the source was changed: %+v", res.Selected, src.Catalog)
			}
		})
	}
}
