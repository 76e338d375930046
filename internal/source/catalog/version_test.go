package catalog

import (
	"testing"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/source"
)

// The version of the bundle a pinned catalog source selected is reported
// (source.Reporter), and the source is not Versioned: its selection may go
// to an older bundle by itself, which the registry must not keep it from.
func TestPinnedVersion(t *testing.T) {
	s := New(nil)
	if _, ok := any(s).(source.Versioned); ok {
		t.Error("the catalog source is Versioned: the registry would keep it from selecting an older bundle")
	}
	for _, tc := range []struct {
		name string
		src  v1alpha2.BundleSource
		want string
	}{
		{"pinned", v1alpha2.BundleSource{Type: v1alpha2.SourceTypeCatalog, Catalog: &v1alpha2.CatalogSource{
			Package: "greeter", ResolvedBundle: "greeter.v1.2.0", ResolvedVersion: "1.2.0", ResolvedImage: "quay.io/x/greeter@sha256:1", CatalogDigest: "sha256:2"}}, "1.2.0"},
		{"not pinned", v1alpha2.BundleSource{Type: v1alpha2.SourceTypeCatalog, Catalog: &v1alpha2.CatalogSource{Package: "greeter", Version: "1.x"}}, ""},
		{"not a catalog", v1alpha2.BundleSource{Type: v1alpha2.SourceTypeImage, Image: &v1alpha2.ImageSource{Ref: "quay.io/x/y"}}, ""},
	} {
		if got := s.PinnedVersion(tc.src); got != tc.want {
			t.Errorf("%s: PinnedVersion = %q, want %q", tc.name, got, tc.want)
		}
	}
}
