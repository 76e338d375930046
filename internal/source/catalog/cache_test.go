package catalog

import (
	"context"
	"errors"
	"testing"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/catalog"
)

func TestCache(t *testing.T) {
	ctx := context.Background()
	c := newCache(2)
	loads := 0
	load := func() (*catalog.Catalog, error) { loads++; return &catalog.Catalog{}, nil }
	steps := []struct {
		key       string
		wantLoads int
	}{
		{"a", 1}, {"a", 1}, {"b", 2}, {"a", 2}, // a is used last
		{"c", 3},           // evicts b
		{"a", 3}, {"b", 4}, // b read again
	}
	for i, st := range steps {
		if _, err := c.get(ctx, st.key, load); err != nil {
			t.Fatal(err)
		}
		if loads != st.wantLoads || c.len() > 2 {
			t.Fatalf("step %d (%s): %d loads and %d keys, want %d loads and at most 2 keys", i, st.key, loads, c.len(), st.wantLoads)
		}
	}
	// A failed load is not kept.
	boom := errors.New("boom")
	if _, err := c.get(ctx, "d", func() (*catalog.Catalog, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("get = %v, want %v", err, boom)
	}
	if _, err := c.get(ctx, "d", load); err != nil {
		t.Fatalf("get after a failed load: %v", err)
	}
}

func TestCacheKeyNamesCredentials(t *testing.T) {
	src := func(pull string, insecure bool) *v1alpha2.CatalogSource {
		c := &v1alpha2.CatalogSource{Image: "r/c:latest", Package: "p", InsecureSkipTLSVerify: insecure}
		if pull != "" {
			c.PullSecret = &v1alpha2.LocalObjectReference{Name: pull}
		}
		return c
	}
	const d = "sha256:1"
	other := src("", false)
	other.Package, other.Channels = "q", []string{"fast"}
	if cacheKey(src("", false), d) != cacheKey(other, d) {
		t.Error("sources of the same catalog and credentials do not share its parse")
	}
	for _, c := range []*v1alpha2.CatalogSource{src("pull", false), src("", true)} {
		if cacheKey(c, d) == cacheKey(src("", false), d) {
			t.Errorf("a source with credentials %+v shares the parse of one without", c)
		}
	}
}
