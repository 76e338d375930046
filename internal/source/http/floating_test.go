package http

import (
	"context"
	"strings"
	"testing"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

func TestFloating(t *testing.T) {
	tests := []struct {
		name string
		src  v1alpha2.BundleSource
		want bool
	}{
		{"no sha256", v1alpha2.BundleSource{Type: v1alpha2.SourceTypeHTTP, HTTP: &v1alpha2.HTTPSource{URL: "https://example.com/a.tgz"}}, true},
		{"sha256", v1alpha2.BundleSource{Type: v1alpha2.SourceTypeHTTP, HTTP: &v1alpha2.HTTPSource{URL: "https://example.com/a.tgz", SHA256: zeroSHA}}, false},
		{"no http member", v1alpha2.BundleSource{Type: v1alpha2.SourceTypeHTTP}, false},
	}
	for _, tt := range tests {
		if got := New(nil).Floating(tt.src); got != tt.want {
			t.Errorf("%s: Floating = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestMisuse(t *testing.T) {
	ctx := context.Background()
	s := New(nil)
	if _, err := s.Resolve(ctx, v1alpha2.BundleSource{Type: v1alpha2.SourceTypeHTTP}); failure.As(err) == nil {
		t.Errorf("Resolve without an http member: %v, want a terminal failure", err)
	}
	src := v1alpha2.BundleSource{Type: v1alpha2.SourceTypeHTTP, HTTP: &v1alpha2.HTTPSource{URL: "https://example.com/a.tgz"}}
	if err := s.Unpack(ctx, src, t.TempDir()); err == nil || !strings.Contains(err.Error(), "not pinned") {
		t.Errorf("Unpack of an unpinned source: %v, want not pinned", err)
	}
}
