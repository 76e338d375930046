//go:build integration

package git

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/source/credentials"
)

// TestTags: Tags lists the tags a repository advertises, by name, without
// the peeled entries of annotated tags and without fetching.
func TestTags(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts serverOpts
	}{
		{name: "peeled", opts: serverOpts{}},
		{name: "not peeled", opts: serverOpts{noPeel: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newVersionFixture(t, tt.opts)
			s := New(credentials.NewReader(env.Client, v1alpha2.SystemNamespace), WithWorkDir(t.TempDir()))
			tags, err := s.Tags(context.Background(), f.source("*"))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"v1.0.0", "1.2.0", "v1.3.0", "1.4.0-rc.1", "2.0.0", "latest", "1.5"} {
				if !slices.Contains(tags, want) {
					t.Errorf("tags %v lack %q", tags, want)
				}
			}
			for _, tg := range tags {
				if strings.Contains(tg, "^{}") {
					t.Errorf("tags %v hold a peeled entry", tags)
				}
			}
			if !slices.IsSorted(tags) {
				t.Errorf("tags %v are not sorted", tags)
			}
		})
	}
}
