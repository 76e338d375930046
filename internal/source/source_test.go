package source

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

func TestSamePinnedRanges(t *testing.T) {
	digest := "sha256:" + strings.Repeat("a", 64)
	commit := strings.Repeat("b", 40)
	image := func(versions, tag, d string) v1alpha2.BundleSource {
		return v1alpha2.BundleSource{Type: v1alpha2.SourceTypeImage, Image: &v1alpha2.ImageSource{
			Ref: "quay.io/x/y", Versions: versions, ResolvedTag: tag, Digest: d}}
	}
	git := func(semver, tag, c string) v1alpha2.BundleSource {
		return v1alpha2.BundleSource{Type: v1alpha2.SourceTypeGit, Git: &v1alpha2.GitSource{
			Repository: "https://g/r.git", Ref: v1alpha2.GitRef{Semver: semver}, ResolvedTag: tag, ResolvedCommit: c}}
	}
	tests := []struct {
		name         string
		spec, pinned v1alpha2.BundleSource
		want         bool
	}{
		{"image range pinned", image("1.x", "", ""), image("1.x", "v1.3.0", digest), true},
		{"image range changed", image("2.x", "", ""), image("1.x", "v1.3.0", digest), false},
		{"git range pinned", git("1.x", "", ""), git("1.x", "v1.3.0", commit), true},
		{"git range changed", git(">=1.2 <2", "", ""), git("1.x", "v1.3.0", commit), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := samePinned(tt.spec, tt.pinned); got != tt.want {
				t.Errorf("samePinned = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDescribeRanges(t *testing.T) {
	for _, tt := range []struct {
		src  v1alpha2.BundleSource
		want string
	}{
		{v1alpha2.BundleSource{Image: &v1alpha2.ImageSource{Ref: "quay.io/x/y", Versions: "1.x"}}, `image quay.io/x/y (versions "1.x")`},
		{v1alpha2.BundleSource{Image: &v1alpha2.ImageSource{Ref: "quay.io/x/y", Versions: "1.x", ResolvedTag: "v1.3.0"}}, "image quay.io/x/y:v1.3.0"},
		{v1alpha2.BundleSource{Git: &v1alpha2.GitSource{Repository: "https://u:p@g/r.git", Ref: v1alpha2.GitRef{Semver: "1.x"}}},
			`git repository https://u:xxxxx@g/r.git (semver "1.x")`},
		{v1alpha2.BundleSource{Git: &v1alpha2.GitSource{Repository: "https://g/r.git", Ref: v1alpha2.GitRef{Semver: "1.x"}, ResolvedTag: "v1.3.0"}},
			"git repository https://g/r.git at tag v1.3.0"},
	} {
		if got := Describe(tt.src); got != tt.want {
			t.Errorf("Describe = %q, want %q", got, tt.want)
		}
	}
}

// versionedImages is an image source with versions whose registry
// publishes newest as the newest tag of any range; it counts its lookups.
type versionedImages struct {
	newest  string
	lookups int
}

func (v *versionedImages) Resolve(_ context.Context, src v1alpha2.BundleSource) (v1alpha2.BundleSource, error) {
	if src.Image.Digest != "" {
		return src, nil
	}
	v.lookups++
	out := *src.DeepCopy()
	out.Image.ResolvedTag, out.Image.Digest = v.newest, "sha256:"+strings.Repeat("c", 64)
	return out, nil
}

func (v *versionedImages) Unpack(context.Context, v1alpha2.BundleSource, string) error { return nil }

func (v *versionedImages) Floating(src v1alpha2.BundleSource) bool { return src.Image.Digest == "" }

func (v *versionedImages) SelectedVersion(pinned v1alpha2.BundleSource) string {
	if pinned.Image.Digest == "" {
		return ""
	}
	return pinned.Image.ResolvedTag
}

// A Versioned source, through the deadline the manager wraps every source
// in, never selects by itself an older version than the one it pinned
// last for the same spec: that version is no longer published, kept, and
// said so. A newer one is taken; a changed spec starts afresh; fresh pins
// are reused without a lookup.
func TestVersionedNeverDowngrades(t *testing.T) {
	spec := v1alpha2.BundleSource{Type: v1alpha2.SourceTypeImage, Image: &v1alpha2.ImageSource{Ref: "quay.io/x/y", Versions: "1.x"}}
	pinnedAt := func(spec v1alpha2.BundleSource, tag string) v1alpha2.BundleSource {
		out := *spec.DeepCopy()
		out.Image.ResolvedTag, out.Image.Digest = tag, "sha256:"+strings.Repeat("a", 64)
		return out
	}
	otherRange := *spec.DeepCopy()
	otherRange.Image.Versions = "1.2.x"
	for _, tt := range []struct {
		name            string
		spec            v1alpha2.BundleSource
		previous        v1alpha2.BundleSource
		published       string
		reuse           bool
		want            string
		wantUnpublished []Unpublished
		wantLookups     int
	}{
		{name: "a newer version is published", spec: spec, previous: pinnedAt(spec, "v1.3.0"), published: "v1.4.0", want: "v1.4.0", wantLookups: 1},
		{name: "the same version", spec: spec, previous: pinnedAt(spec, "v1.3.0"), published: "v1.3.0", want: "v1.3.0", wantLookups: 1},
		{name: "the version pinned was removed", spec: spec, previous: pinnedAt(spec, "v1.3.0"), published: "v1.2.0", want: "v1.3.0", wantLookups: 1,
			wantUnpublished: []Unpublished{{Source: 0, Version: "v1.3.0", Newest: "v1.2.0"}}},
		{name: "another range: what it selects", spec: otherRange, previous: pinnedAt(spec, "v1.3.0"), published: "v1.2.0", want: "v1.2.0", wantLookups: 1},
		{name: "pins still fresh: reused", spec: spec, previous: pinnedAt(spec, "v1.3.0"), published: "v1.2.0", reuse: true, want: "v1.3.0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := &versionedImages{newest: tt.published}
			reg := Registry{v1alpha2.SourceTypeImage: v}.WithDeadline(time.Minute)
			res, err := reg.ResolveFrom(context.Background(), []v1alpha2.BundleSource{tt.spec}, []v1alpha2.BundleSource{tt.previous}, tt.reuse, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Pinned[0].Image.ResolvedTag; got != tt.want || v.lookups != tt.wantLookups {
				t.Errorf("selected %s after %d lookups, want %s after %d", got, v.lookups, tt.want, tt.wantLookups)
			}
			if !slices.Equal(res.Unpublished, tt.wantUnpublished) {
				t.Errorf("unpublished %v, want %v", res.Unpublished, tt.wantUnpublished)
			}
		})
	}
}

// reportingCatalog is a catalog source that reports the version its pin
// names (a Reporter, not Versioned).
type reportingCatalog struct{}

func (reportingCatalog) Resolve(_ context.Context, src v1alpha2.BundleSource) (v1alpha2.BundleSource, error) {
	return src, nil
}

func (reportingCatalog) Unpack(context.Context, v1alpha2.BundleSource, string) error { return nil }

func (reportingCatalog) PinnedVersion(pinned v1alpha2.BundleSource) string {
	return pinned.Catalog.ResolvedVersion
}

// The version a revision's pinned sources selected is the first source's
// that names one, a Versioned source's or a Reporter's, through the
// deadline the manager wraps every source in; sources that select no
// version are passed over.
func TestSelectedVersion(t *testing.T) {
	reg := Registry{
		v1alpha2.SourceTypeImage:   &versionedImages{},
		v1alpha2.SourceTypeCatalog: reportingCatalog{},
	}.WithDeadline(time.Minute)
	image := func(tag, digest string) v1alpha2.BundleSource {
		return v1alpha2.BundleSource{Type: v1alpha2.SourceTypeImage, Image: &v1alpha2.ImageSource{Ref: "quay.io/x/y", Versions: "1.x", ResolvedTag: tag, Digest: digest}}
	}
	catalog := v1alpha2.BundleSource{Type: v1alpha2.SourceTypeCatalog, Catalog: &v1alpha2.CatalogSource{ResolvedVersion: "4.2.0"}}
	config := v1alpha2.BundleSource{Type: v1alpha2.SourceTypeConfigMaps}
	digest := "sha256:" + strings.Repeat("a", 64)
	for _, tt := range []struct {
		name   string
		pinned []v1alpha2.BundleSource
		want   string
	}{
		{"none", nil, ""},
		{"a range's tag", []v1alpha2.BundleSource{image("v1.3.0", digest)}, "v1.3.0"},
		{"a catalog's bundle version", []v1alpha2.BundleSource{catalog}, "4.2.0"},
		{"the first that names one", []v1alpha2.BundleSource{config, image("v1.3.0", digest), catalog}, "v1.3.0"},
		{"a pin not complete names none", []v1alpha2.BundleSource{image("v1.3.0", ""), catalog}, "4.2.0"},
		{"a source of an unknown type names none", []v1alpha2.BundleSource{config}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := reg.SelectedVersion(tt.pinned); got != tt.want {
				t.Errorf("SelectedVersion = %q, want %q", got, tt.want)
			}
		})
	}
}
