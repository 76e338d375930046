package renderstore

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestNames(t *testing.T) {
	long := strings.Repeat("a", 240) + "-" + strings.Repeat("b", 12) // 253 characters
	tests := []struct {
		name       string
		bundle     string
		wantChunk0 string // "" when shortened
		wantLabel  string // "" when shortened
	}{
		{name: "short", bundle: "shop-6f9c7d", wantChunk0: "render-shop-6f9c7d-0", wantLabel: "shop-6f9c7d"},
		{name: "63 characters", bundle: strings.Repeat("x", 63), wantChunk0: "render-" + strings.Repeat("x", 63) + "-0", wantLabel: strings.Repeat("x", 63)},
		{name: "64 characters", bundle: strings.Repeat("x", 64), wantChunk0: "render-" + strings.Repeat("x", 64) + "-0"},
		{name: "with dots", bundle: "a.b.c", wantChunk0: "render-a.b.c-0", wantLabel: "a.b.c"},
		{name: "253 characters", bundle: long},
		{name: "label cut at a dash", bundle: strings.Repeat("a", 45) + "-" + strings.Repeat("b", 20)},
		{name: "label cut at a dot", bundle: strings.Repeat("a", 45) + "." + strings.Repeat("b", 20)},
		{name: "name cut at a dash", bundle: strings.Repeat("a", 222) + "-" + strings.Repeat("b", 20)},
		{name: "name cut at a dot", bundle: strings.Repeat("a", 222) + "." + strings.Repeat("b", 20)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, i := range []int{0, 7, maxChunksCap - 1} {
				name := chunkName(tt.bundle, i)
				if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
					t.Fatalf("chunk %d's name %q: %v", i, name, errs)
				}
				if got, ok := chunkIndex(tt.bundle, name); !ok || got != i {
					t.Fatalf("chunkIndex(%q) = %d, %v; want %d", name, got, ok, i)
				}
			}
			if got := chunkName(tt.bundle, 0); tt.wantChunk0 != "" && got != tt.wantChunk0 {
				t.Fatalf("chunk 0 is %q, want %q", got, tt.wantChunk0)
			}
			label := labelValue(tt.bundle)
			if errs := validation.IsValidLabelValue(label); len(errs) > 0 {
				t.Fatalf("label %q: %v", label, errs)
			}
			if tt.wantLabel != "" && label != tt.wantLabel {
				t.Fatalf("label is %q, want %q", label, tt.wantLabel)
			}
		})
	}
	// Long names that share their first 240 characters differ.
	other := long[:len(long)-1] + "c"
	if chunkName(long, 0) == chunkName(other, 0) || labelValue(long) == labelValue(other) {
		t.Fatal("two long names share a chunk name or label")
	}
}

func TestChunkIndexRefuses(t *testing.T) {
	tests := []struct{ bundle, name string }{
		{"shop", "render-shop-"},
		{"shop", "render-shop-01"},
		{"shop", "render-shop--1"},
		{"shop", "render-shop-x"},
		{"shop", "render-shop-1-0"}, // bundle shop-1's
		{"shop-1", "render-shop-10"},
		{"shop", "values-shop-0"},
	}
	for _, tt := range tests {
		if i, ok := chunkIndex(tt.bundle, tt.name); ok {
			t.Errorf("chunkIndex(%q, %q) = %d, want none", tt.bundle, tt.name, i)
		}
	}
}
