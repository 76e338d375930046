package history_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/history"
)

// hex64 is a 64-digit hex string made of n, for digests and sha256s.
func hex64(n int) string { return fmt.Sprintf("%064x", n) }

func TestMarkers(t *testing.T) {
	bd := &v1alpha2.BundleDeployment{Status: v1alpha2.BundleDeploymentStatus{ActiveBundle: "a", LastHealthyBundle: "a", FailedBundle: "b"}}
	if got := strings.Join(history.Markers(bd, "a"), ","); got != "active,last-healthy" {
		t.Errorf("Markers(a) = %q", got)
	}
	if got := strings.Join(history.Markers(bd, "b"), ","); got != "failed" {
		t.Errorf("Markers(b) = %q", got)
	}
	if got := history.Markers(bd, "c"); got != nil {
		t.Errorf("Markers(c) = %q, want none", got)
	}
}

func TestSourceSummary(t *testing.T) {
	tests := []struct {
		name string
		src  v1alpha2.BundleSource
		want string
	}{
		{name: "image tag with digest", src: v1alpha2.BundleSource{Type: v1alpha2.SourceTypeImage, Image: &v1alpha2.ImageSource{
			Ref: "quay.io/example/op:v1", Digest: "sha256:" + hex64(1)}}, want: "image quay.io/example/op:v1@sha256:000000000000…"},
		{name: "image by digest", src: v1alpha2.BundleSource{Type: v1alpha2.SourceTypeImage,
			Image: &v1alpha2.ImageSource{Ref: "quay.io/x/y@sha256:abcd1234abcd1234abcd"}},
			want: "image quay.io/x/y@sha256:abcd1234abcd…"},
		{name: "image tag unpinned", src: v1alpha2.BundleSource{Type: v1alpha2.SourceTypeImage,
			Image: &v1alpha2.ImageSource{Ref: "quay.io/x/y:v1"}}, want: "image quay.io/x/y:v1"},
		{name: "git commit", src: v1alpha2.BundleSource{Type: v1alpha2.SourceTypeGit,
			Git: &v1alpha2.GitSource{Repository: "https://g/r.git", Ref: v1alpha2.GitRef{Commit: "0123456789abcdef0123456789abcdef01234567"}}},
			want: "git https://g/r.git@0123456789ab"},
		{name: "git tag unresolved", src: v1alpha2.BundleSource{Type: v1alpha2.SourceTypeGit,
			Git: &v1alpha2.GitSource{Repository: "https://g/r.git", Ref: v1alpha2.GitRef{Tag: "v1.2.0"}}},
			want: "git https://g/r.git@v1.2.0"},
		{name: "image range pinned", src: v1alpha2.BundleSource{Type: v1alpha2.SourceTypeImage, Image: &v1alpha2.ImageSource{
			Ref: "quay.io/x/y", Versions: "1.x", ResolvedTag: "v1.3.0", Digest: "sha256:" + hex64(1)}},
			want: "image quay.io/x/y:v1.3.0@sha256:000000000000…"},
		{name: "image range unpinned", src: v1alpha2.BundleSource{Type: v1alpha2.SourceTypeImage,
			Image: &v1alpha2.ImageSource{Ref: "quay.io/x/y", Versions: ">=1.2 <2"}}, want: "image quay.io/x/y (versions >=1.2 <2)"},
		{name: "git semver pinned", src: v1alpha2.BundleSource{Type: v1alpha2.SourceTypeGit, Git: &v1alpha2.GitSource{Repository: "https://g/r.git",
			Ref: v1alpha2.GitRef{Semver: "1.x"}, ResolvedCommit: "0123456789abcdef0123456789abcdef01234567", ResolvedTag: "v1.3.0"}},
			want: "git https://g/r.git@0123456789ab (tag v1.3.0)"},
		{name: "git semver unresolved", src: v1alpha2.BundleSource{Type: v1alpha2.SourceTypeGit,
			Git: &v1alpha2.GitSource{Repository: "https://g/r.git", Ref: v1alpha2.GitRef{Semver: ">=1.2 <2"}}},
			want: "git https://g/r.git (semver >=1.2 <2)"},
		{name: "http with credentials and query", src: v1alpha2.BundleSource{Type: v1alpha2.SourceTypeHTTP,
			HTTP: &v1alpha2.HTTPSource{URL: "https://u:p@h.example/a.tgz?sig=secret", SHA256: hex64(255)}},
			want: "http https://h.example/a.tgz?… sha256:000000000000…"},
		{name: "catalog pinned", src: v1alpha2.BundleSource{Type: v1alpha2.SourceTypeCatalog, Catalog: &v1alpha2.CatalogSource{
			Image: "quay.io/x/catalog:latest", Package: "greeter", Version: "1.x", ResolvedBundle: "greeter.v1.2.0", ResolvedVersion: "1.2.0"}},
			want: "catalog quay.io/x/catalog:latest greeter@1.2.0 (greeter.v1.2.0)"},
		{name: "catalog unresolved", src: v1alpha2.BundleSource{Type: v1alpha2.SourceTypeCatalog, Catalog: &v1alpha2.CatalogSource{
			Image: "quay.io/x/catalog:latest", Package: "greeter", Version: "1.x"}},
			want: "catalog quay.io/x/catalog:latest greeter@1.x"},
		{name: "configMaps", src: v1alpha2.BundleSource{Type: v1alpha2.SourceTypeConfigMaps, ConfigMaps: []v1alpha2.ConfigMapSource{
			{ConfigMap: v1alpha2.LocalObjectReference{Name: "a"}}, {ConfigMap: v1alpha2.LocalObjectReference{Name: "b"}}}},
			want: "configMaps a,b"},
		{name: "upload", src: v1alpha2.BundleSource{Type: v1alpha2.SourceTypeUpload,
			Upload: &v1alpha2.UploadSource{Digest: "sha256:feedfacefeedfacefeed"}}, want: "upload sha256:feedfacefeed…"},
		{name: "type without member", src: v1alpha2.BundleSource{Type: v1alpha2.SourceTypeHTTP}, want: "http"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := history.SourceSummary(tt.src); got != tt.want {
				t.Errorf("SourceSummary = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSort(t *testing.T) {
	at := func(sec int64) metav1.Time { return metav1.NewTime(time.Unix(sec, 0)) }
	b := func(name string, sec int64) v1alpha2.Bundle {
		return v1alpha2.Bundle{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: at(sec)}}
	}
	tests := []struct {
		name string
		in   []v1alpha2.Bundle
		want []string
	}{
		{name: "by creation time before name", in: []v1alpha2.Bundle{b("a", 3), b("b", 1), b("c", 2)}, want: []string{"b", "c", "a"}},
		{name: "by name within one second", in: []v1alpha2.Bundle{b("z", 1), b("m", 1), b("a", 2)}, want: []string{"m", "z", "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			history.Sort(tt.in)
			var got []string
			for _, r := range tt.in {
				got = append(got, r.Name)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("order %v, want %v", got, tt.want)
			}
		})
	}
}
