package crdsafety

import (
	"slices"
	"testing"
)

func TestParsePath(t *testing.T) {
	tests := []struct {
		path   string
		want   []string
		wantOK bool
	}{
		{".spec.color", []string{"spec", "color"}, true},
		{".spec.items[*].name", []string{"spec", "items", "[*]", "name"}, true},
		{".spec.labels.*", []string{"spec", "labels", "*"}, true},
		{".spec[*][*]", []string{"spec", "[*]", "[*]"}, true},
		{".", nil, false},
		{"", nil, false},
		{`.spec["a.b"]`, nil, false},
		{"..x", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, ok := parsePath(tt.path)
			if ok != tt.wantOK || !slices.Equal(got, tt.want) {
				t.Errorf("parsePath(%q) = %q, %v; want %q, %v", tt.path, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestHoldsValue(t *testing.T) {
	obj := map[string]any{"spec": map[string]any{
		"color": "red",
		"items": []any{map[string]any{"a": 1}, map[string]any{"name": "n"}},
		"nulls": nil,
		"m":     map[string]any{"k": map[string]any{"v": true}},
	}}
	tests := []struct {
		path string
		want bool
	}{
		{".spec.color", true},
		{".spec.size", false},
		{".spec.items[*].name", true},
		{".spec.items[*].other", false},
		{".spec.color[*]", false},
		{".spec.nulls", true},
		{".spec.m.*.v", true},
		{".spec.m.*.w", false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			segs, _ := parsePath(tt.path)
			if got := holdsValue(obj, segs); got != tt.want {
				t.Errorf("holdsValue(%s) = %v, want %v", tt.path, got, tt.want)
			}
		})
	}
}
