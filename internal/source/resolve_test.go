package source

import (
	"context"
	"testing"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// successor is a catalog source that pins to the bundle it is asked to
// resolve from, recording how it was called.
type successor struct{ calls []string }

func (s *successor) Resolve(_ context.Context, src v1alpha2.BundleSource) (v1alpha2.BundleSource, error) {
	s.calls = append(s.calls, "Resolve")
	return pin(src, "newest"), nil
}

func (s *successor) ResolveFrom(_ context.Context, src v1alpha2.BundleSource, installed *v1alpha2.BundleSource) (v1alpha2.BundleSource, error) {
	s.calls = append(s.calls, "ResolveFrom "+installed.Catalog.ResolvedBundle)
	return pin(src, "after-"+installed.Catalog.ResolvedBundle), nil
}

func (s *successor) Unpack(context.Context, v1alpha2.BundleSource, string) error { return nil }

func (s *successor) Floating(src v1alpha2.BundleSource) bool { return src.Catalog.ResolvedImage == "" }

func pin(src v1alpha2.BundleSource, bundle string) v1alpha2.BundleSource {
	out := *src.DeepCopy()
	out.Catalog.ResolvedBundle, out.Catalog.ResolvedVersion = bundle, "1.0.0"
	out.Catalog.ResolvedImage, out.Catalog.CatalogDigest = "r/b@sha256:1", "sha256:2"
	return out
}

func catalogSource() v1alpha2.BundleSource {
	return v1alpha2.BundleSource{Type: v1alpha2.SourceTypeCatalog, Catalog: &v1alpha2.CatalogSource{Image: "r/c:latest", Package: "p"}}
}

func TestResolveFrom(t *testing.T) {
	installed := []v1alpha2.BundleSource{pin(catalogSource(), "old")}
	tests := []struct {
		name      string
		installed []v1alpha2.BundleSource
		wrap      bool // through WithDeadline
		want      string
		wantCall  string
	}{
		{name: "nothing installed", want: "newest", wantCall: "Resolve"},
		{name: "installed", installed: installed, want: "after-old", wantCall: "ResolveFrom old"},
		{name: "installed, through the deadline", installed: installed, wrap: true, want: "after-old", wantCall: "ResolveFrom old"},
		{name: "installed of another type", installed: []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeImage}}, want: "newest", wantCall: "Resolve"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &successor{}
			reg := Registry{v1alpha2.SourceTypeCatalog: s}
			if tt.wrap {
				reg = reg.WithDeadline(0)
			}
			res, err := reg.ResolveFrom(context.Background(), []v1alpha2.BundleSource{catalogSource()}, nil, false, tt.installed)
			if err != nil {
				t.Fatal(err)
			}
			got := res.Pinned
			if got[0].Catalog.ResolvedBundle != tt.want || len(s.calls) != 1 || s.calls[0] != tt.wantCall {
				t.Errorf("pinned to %q by %v, want %q by %q", got[0].Catalog.ResolvedBundle, s.calls, tt.want, tt.wantCall)
			}
		})
	}
}

func TestSamePinnedCatalog(t *testing.T) {
	spec := catalogSource()
	if !samePinned(spec, pin(spec, "b")) {
		t.Error("a catalog source is not the same as its pinned form")
	}
	other := catalogSource()
	other.Catalog.Channels = []string{"fast"}
	if samePinned(other, pin(spec, "b")) {
		t.Error("a catalog source of other channels is the same as the pinned form of another")
	}
}
