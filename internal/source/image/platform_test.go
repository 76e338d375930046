package image

import (
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

func TestParsePlatform(t *testing.T) {
	tests := []struct {
		spec, def string
		want      v1.Platform
		wantErr   bool
	}{
		{spec: "linux/arm64", def: "linux/amd64", want: v1.Platform{OS: "linux", Architecture: "arm64"}},
		{spec: "linux/arm/v7", def: "linux/amd64", want: v1.Platform{OS: "linux", Architecture: "arm", Variant: "v7"}},
		{spec: "", def: "linux/amd64", want: v1.Platform{OS: "linux", Architecture: "amd64"}},
		{spec: "linux", wantErr: true},
		{spec: "linux/", wantErr: true},
		{spec: "/amd64", wantErr: true},
		{spec: "linux/arm/v7/x", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			got, err := parsePlatform(tt.spec, tt.def)
			if tt.wantErr {
				if failure.Reason(err, "") != v1alpha2.ReasonUnpackFailed {
					t.Fatalf("error = %v, want an UnpackFailed failure", err)
				}
				return
			}
			if err != nil || !got.Equals(tt.want) {
				t.Fatalf("parsePlatform = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestMatches(t *testing.T) {
	p := func(s string) v1.Platform { q, _ := parsePlatform(s, ""); return q }
	tests := []struct {
		have, want string
		match      bool
	}{
		{have: "linux/amd64", want: "linux/amd64", match: true},
		{have: "linux/arm64/v8", want: "linux/arm64", match: true},
		{have: "linux/arm64", want: "linux/arm64/v8", match: true},
		{have: "linux/arm/v6", want: "linux/arm", match: true},
		{have: "linux/arm/v6", want: "linux/arm/v7", match: false},
		{have: "linux/arm", want: "linux/arm/v7", match: false},
		{have: "linux/amd64", want: "windows/amd64", match: false},
		{have: "linux/amd64", want: "linux/arm64", match: false},
	}
	for _, tt := range tests {
		t.Run(tt.have+" for "+tt.want, func(t *testing.T) {
			if got := matches(p(tt.have), p(tt.want)); got != tt.match {
				t.Fatalf("matches = %v, want %v", got, tt.match)
			}
		})
	}
}

func TestFloating(t *testing.T) {
	const digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	tests := []struct {
		name string
		img  *v1alpha2.ImageSource
		want bool
	}{
		{name: "tag", img: &v1alpha2.ImageSource{Ref: "registry.example.com/app:v1"}, want: true},
		{name: "no tag means latest", img: &v1alpha2.ImageSource{Ref: "registry.example.com/app"}, want: true},
		{name: "tag pinned by the digest field", img: &v1alpha2.ImageSource{Ref: "registry.example.com/app:v1", Digest: digest}},
		{name: "ref by digest", img: &v1alpha2.ImageSource{Ref: "registry.example.com/app@" + digest}},
		{name: "tag and digest", img: &v1alpha2.ImageSource{Ref: "registry.example.com/app:v1@" + digest}},
		{name: "unparsable", img: &v1alpha2.ImageSource{Ref: "not a ref"}},
		{name: "versions", img: &v1alpha2.ImageSource{Ref: "registry.example.com/app", Versions: "1.x"}, want: true},
		{name: "versions pinned", img: &v1alpha2.ImageSource{Ref: "registry.example.com/app", Versions: "1.x", ResolvedTag: "v1.0.0", Digest: digest}},
		{name: "no image member"},
	}
	s := New(nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := v1alpha2.BundleSource{Type: v1alpha2.SourceTypeImage, Image: tt.img}
			if got := s.Floating(src); got != tt.want {
				t.Fatalf("Floating = %v, want %v", got, tt.want)
			}
		})
	}
}
