package values

import (
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func mustYAML(t *testing.T, s string) map[string]any {
	t.Helper()
	m, err := parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMerge(t *testing.T) {
	tests := []struct {
		name string
		docs []string
		want string
	}{
		{"scalar replaced", []string{"a: 1\nb: x", "a: 2"}, "a: 2\nb: x"},
		{"nested maps merge", []string{"image: {repo: r, tag: '1'}", "image: {tag: '2'}"}, "image: {repo: r, tag: '2'}"},
		{"list replaced, not appended", []string{"l: [1, 2]", "l: [3]"}, "l: [3]"},
		{"null kept to delete a chart default", []string{"a: {b: 1}", "a: null"}, "a: null"},
		{"map replaces scalar", []string{"a: 1", "a: {b: 2}"}, "a: {b: 2}"},
		{"scalar replaces map", []string{"a: {b: 2}", "a: 1"}, "a: 1"},
		{"later wins over three documents", []string{"x: 1", "x: 2", "x: 3\ny: 1"}, "x: 3\ny: 1"},
		{"empty document changes nothing", []string{"a: 1", ""}, "a: 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got map[string]any
			for _, d := range tt.docs {
				got = Merge(got, mustYAML(t, d))
			}
			want := mustYAML(t, tt.want)
			if !reflect.DeepEqual(got, want) {
				g, _ := yaml.Marshal(got)
				t.Fatalf("Merge() =\n%s\nwant\n%s", g, tt.want)
			}
		})
	}
}

// TestMergeDoesNotAlias checks that merging never writes into a source map.
func TestMergeDoesNotAlias(t *testing.T) {
	src := mustYAML(t, "a: {b: 1}")
	got := Merge(nil, src)
	Merge(got, mustYAML(t, "a: {b: 2}"))
	if src["a"].(map[string]any)["b"] != float64(1) {
		t.Fatalf("source was changed: %v", src)
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr string
	}{
		{"object", "a: 1", ""},
		{"json object", `{"a": 1}`, ""},
		{"empty", "", ""},
		{"list", "- 1", "must be a YAML object"},
		{"scalar", "3", "must be a YAML object"},
		{"invalid", "a: [", "not valid YAML"},
		{"too large", "a: " + strings.Repeat("x", maxValuesBytes), "over the limit"},
		// Values from a ConfigMap or Secret are read in the manager's own
		// process: an alias bomb must stop early.
		{"YAML alias bomb", laughs, "excessive aliasing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse([]byte(tt.in))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("parse() error = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("parse() error = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// laughs is a "billion laughs" document: nine levels of aliases that would
// expand to 10^9 strings.
const laughs = `a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h,*h]
`
