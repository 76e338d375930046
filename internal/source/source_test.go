package source

import (
	"context"
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

// forwardSource counts how it is resolved.
type forwardSource struct{ resolves, forwards int }

func (f *forwardSource) Resolve(_ context.Context, src v1alpha2.BundleSource) (v1alpha2.BundleSource, error) {
	f.resolves++
	return src, nil
}

func (f *forwardSource) ResolveForward(_ context.Context, _, previous v1alpha2.BundleSource) (v1alpha2.BundleSource, error) {
	f.forwards++
	return previous, nil
}

func (f *forwardSource) Unpack(context.Context, v1alpha2.BundleSource, string) error { return nil }

// TestDeadlineKeepsForward checks that a Forward source wrapped with a
// deadline, as the manager wraps every source, is still resolved forward.
func TestDeadlineKeepsForward(t *testing.T) {
	f := &forwardSource{}
	reg := Registry{v1alpha2.SourceTypeImage: f}.WithDeadline(time.Minute)
	spec := v1alpha2.BundleSource{Type: v1alpha2.SourceTypeImage, Image: &v1alpha2.ImageSource{Ref: "quay.io/x/y", Versions: "1.x"}}
	previous := *spec.DeepCopy()
	previous.Image.ResolvedTag, previous.Image.Digest = "v1.3.0", "sha256:"+strings.Repeat("a", 64)
	out, err := reg.Resolve(context.Background(), []v1alpha2.BundleSource{spec}, []v1alpha2.BundleSource{previous}, false)
	if err != nil {
		t.Fatal(err)
	}
	if f.forwards != 1 || f.resolves != 0 || out[0].Image.ResolvedTag != "v1.3.0" {
		t.Fatalf("forwards %d, resolves %d, resolved %v; want one forward resolve keeping the previous pin", f.forwards, f.resolves, out[0].Image)
	}
}
