package crdsafety

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestSchemaPath turns object paths into schema paths along a schema.
func TestSchemaPath(t *testing.T) {
	v := version("v1", object(props{
		"items":  arrayOf(object(props{"name": str()})),
		"labels": mapOf(object(props{"v": str()})),
		"a.b":    str(),
		"free":   preserving(apiextensionsv1.JSONSchemaProps{Type: "object"}),
	}))
	vc, err := newVersionCheck(&v, &v)
	if err != nil {
		t.Fatal(err)
	}
	s := vc.new.structural
	tests := []struct {
		raw, want string
	}{
		{"", "."},
		{"<nil>", "."},
		{"spec", ".spec"},
		{"spec.items[12].name", ".spec.items[*].name"},
		{"spec.labels[some.key].v", ".spec.labels.*.v"},
		{"spec.labels.key.v", ".spec.labels.*.v"},
		{"spec.gone.deeper[0]", ".spec.gone.deeper[*]"},
		{"spec.free.x.y", ".spec.free.x.y"},
		{"spec.unclosed[3", ".spec.unclosed[*]"},
	}
	for _, tt := range tests {
		if got := schemaPath(tt.raw, s); got != tt.want {
			t.Errorf("schemaPath(%q) = %q, want %q", tt.raw, got, tt.want)
		}
	}
}

// TestParentPath walks schema paths up.
func TestParentPath(t *testing.T) {
	for raw, want := range map[string]string{
		".spec.items[*]": ".spec.items",
		".spec.a":        ".spec",
		".spec":          ".",
		".":              ".",
		".spec.m.*":      ".spec.m",
	} {
		if got := parentPath(raw); got != want {
			t.Errorf("parentPath(%q) = %q, want %q", raw, got, want)
		}
	}
}
