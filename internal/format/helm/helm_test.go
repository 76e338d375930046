package helm

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
	"github.com/rukpak/rukpak/pkg/format"
)

// files builds a MapFS from name/content pairs.
func files(kv ...string) fstest.MapFS {
	m := fstest.MapFS{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = &fstest.MapFile{Data: []byte(kv[i+1]), Mode: 0o644}
	}
	return m
}

// with returns a copy of base with the files of more added.
func with(base fstest.MapFS, more fstest.MapFS) fstest.MapFS {
	m := fstest.MapFS{}
	for k, v := range base {
		m[k] = v
	}
	for k, v := range more {
		m[k] = v
	}
	return m
}

// objects runs Objects with a default config and values.
func objects(t *testing.T, fsys fs.FS, values map[string]any) ([]*unstructured.Unstructured, error) {
	t.Helper()
	return New().Objects(context.Background(), fsys, format.Config{
		InstallNamespace: "ns", ReleaseName: "rel", Values: values,
	})
}

// valuesChart dumps the values the parent chart and its subchart see.
var valuesChart = files(
	"Chart.yaml", `apiVersion: v2
name: parent
version: 0.1.0
dependencies:
  - {name: sub, version: 0.1.0}
`,
	"values.yaml", `a: 1
m: {p: 1, q: 2}
l: [1, 2]
sub: {s: parent-default}
global: {g: default}
`,
	"templates/values.yaml", `apiVersion: v1
kind: ConfigMap
metadata: {name: parent-values}
data: {values: {{ toJson .Values | quote }}}
`,
	"charts/sub/Chart.yaml", "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
	"charts/sub/values.yaml", "s: sub-default\nt: kept\n",
	"charts/sub/templates/values.yaml", `apiVersion: v1
kind: ConfigMap
metadata: {name: sub-values}
data: {values: {{ toJson .Values | quote }}}
`,
)

// seenValues returns the values dumped by the ConfigMap name of objs.
func seenValues(t *testing.T, objs []*unstructured.Unstructured, name string) map[string]any {
	t.Helper()
	for _, o := range objs {
		if o.GetName() != name {
			continue
		}
		s, _, _ := unstructured.NestedString(o.Object, "data", "values")
		var v map[string]any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return v
	}
	t.Fatalf("no object %s", name)
	return nil
}

func TestValuesMerging(t *testing.T) {
	tests := []struct {
		name   string
		values string
		// object is the ConfigMap to look at; path the keys to the value.
		object string
		path   []string
		want   any
		absent bool
	}{
		{name: "defaults", object: "parent-values", path: []string{"a"}, want: 1.0},
		{name: "override scalar", values: "a: 2", object: "parent-values", path: []string{"a"}, want: 2.0},
		{name: "nested maps merge", values: "m: {q: 3}", object: "parent-values", path: []string{"m"},
			want: map[string]any{"p": 1.0, "q": 3.0}},
		{name: "null deletes a default", values: "m: {p: null}", object: "parent-values", path: []string{"m"},
			want: map[string]any{"q": 2.0}},
		{name: "null deletes a whole table", values: "m: null", object: "parent-values", path: []string{"m"}, absent: true},
		{name: "lists are replaced", values: "l: [3]", object: "parent-values", path: []string{"l"}, want: []any{3.0}},
		{name: "new keys are added", values: "extra: {deep: true}", object: "parent-values", path: []string{"extra", "deep"}, want: true},
		{name: "parent defaults override subchart defaults", object: "sub-values", path: []string{"s"}, want: "parent-default"},
		{name: "subchart defaults are kept", object: "sub-values", path: []string{"t"}, want: "kept"},
		{name: "subchart values under its key", values: "sub: {s: user, t: changed}", object: "sub-values",
			path: []string{"t"}, want: "changed"},
		{name: "subchart sees no parent values", values: "a: 5", object: "sub-values", path: []string{"a"}, absent: true},
		{name: "globals reach the parent", values: "global: {g: user, h: new}", object: "parent-values",
			path: []string{"global"}, want: map[string]any{"g": "user", "h": "new"}},
		{name: "globals reach the subchart", values: "global: {g: user}", object: "sub-values",
			path: []string{"global", "g"}, want: "user"},
		{name: "subchart sees parent's default globals", object: "sub-values", path: []string{"global", "g"}, want: "default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			values := parseValues(t, tt.values)
			before, _ := json.Marshal(values)
			objs, err := objects(t, valuesChart, values)
			if err != nil {
				t.Fatalf("Objects() error = %v", err)
			}
			if after, _ := json.Marshal(values); string(after) != string(before) {
				t.Errorf("Objects changed cfg.Values from %s to %s", before, after)
			}
			var got any = seenValues(t, objs, tt.object)
			found := true
			for _, k := range tt.path {
				m, ok := got.(map[string]any)
				if !ok {
					found = false
					break
				}
				got, found = m[k]
				if !found {
					break
				}
			}
			switch {
			case tt.absent && found:
				t.Fatalf("%v = %v, want it absent", tt.path, got)
			case !tt.absent && !reflect.DeepEqual(got, tt.want):
				t.Fatalf("%v = %#v, want %#v", tt.path, got, tt.want)
			}
		})
	}
}

func TestSchemaReferencesAreNotFetched(t *testing.T) {
	// A schema on the manager's disk that no value matches: were it read,
	// validation would fail.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "never.json"), []byte(`{"not": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	schema := `{
  "type": "object",
  "properties": {
    "replicas": {"$ref": "file://` + filepath.ToSlash(filepath.Join(dir, "never.json")) + `"},
    "image": {"$ref": "https://schemas.example.invalid/image.json"},
    "local": {"$ref": "#/definitions/port"}
  },
  "definitions": {"port": {"type": "integer"}}
}`
	fsys := with(simple, files("values.schema.json", schema))
	if _, err := objects(t, fsys, map[string]any{"image": "x", "local": 80}); err != nil {
		t.Fatalf("Objects() error = %v", err)
	}
	// References within the schema still apply.
	_, err := objects(t, fsys, map[string]any{"local": "eighty"})
	if failure.Reason(err, "") != v1alpha2.ReasonInvalidConfig || !strings.Contains(err.Error(), "/local") {
		t.Fatalf("Objects() error = %v, want InvalidConfig about /local", err)
	}
}

func TestPackagedSubchart(t *testing.T) {
	sub := packChart(t, files(
		"sub/Chart.yaml", "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
		"sub/values.yaml", "greeting: hi\n",
		"sub/templates/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: sub}\ndata: {greeting: {{ .Values.greeting }}}\n",
	))
	fsys := with(simple, fstest.MapFS{
		"Chart.yaml":           {Data: []byte("apiVersion: v2\nname: simple\nversion: 0.1.0\ndependencies: [{name: sub, version: 0.1.x}]\n")},
		"charts/sub-0.1.0.tgz": {Data: sub},
	})
	// Objects of one kind keep template path order, as in Helm:
	// simple/charts/sub/templates/ before simple/templates/.
	objs, err := objects(t, fsys, map[string]any{"sub": map[string]any{"greeting": "hello"}})
	if err != nil {
		t.Fatalf("Objects() error = %v", err)
	}
	var got []string
	for _, o := range objs {
		g, _, _ := unstructured.NestedString(o.Object, "data", "greeting")
		got = append(got, o.GetName()+"="+g)
	}
	if want := []string{"sub=hello", "rel="}; !reflect.DeepEqual(got, want) {
		t.Fatalf("objects = %v, want %v", got, want)
	}
}

func TestCapabilities(t *testing.T) {
	chart := withTemplate("caps.yaml", `apiVersion: v1
kind: ConfigMap
metadata: {name: caps}
data:
  version: {{ .Capabilities.KubeVersion.Version }}
  hasApps: {{ .Capabilities.APIVersions.Has "apps/v1" | quote }}
`)
	tests := []struct {
		name    string
		caps    *format.Capabilities
		version string
		hasApps string
	}{
		{name: "no cluster: Helm's defaults", version: "v1.20.0", hasApps: "true"},
		{name: "cluster", caps: &format.Capabilities{KubeVersion: "v1.36.3", APIVersions: []string{"v1"}},
			version: "v1.36.3", hasApps: "false"},
		{name: "cluster without a version", caps: &format.Capabilities{APIVersions: []string{"apps/v1"}},
			version: "v1.20.0", hasApps: "true"},
		{name: "cluster without API versions: Helm's defaults", caps: &format.Capabilities{KubeVersion: "1.33.1"},
			version: "v1.33.1", hasApps: "true"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := New().Objects(context.Background(), chart, format.Config{ReleaseName: "rel", Capabilities: tt.caps})
			if err != nil {
				t.Fatalf("Objects() error = %v", err)
			}
			for _, o := range objs {
				if o.GetName() != "caps" {
					continue
				}
				data, _, _ := unstructured.NestedStringMap(o.Object, "data")
				if data["version"] != tt.version || data["hasApps"] != tt.hasApps {
					t.Fatalf("data = %v, want version %s and hasApps %s", data, tt.version, tt.hasApps)
				}
			}
		})
	}
	_, err := New().Objects(context.Background(), chart, format.Config{Capabilities: &format.Capabilities{KubeVersion: "nonsense"}})
	if err == nil || failure.As(err) != nil {
		t.Fatalf("an unparsable cluster version: error = %v, want a plain (retried) error", err)
	}
}

func TestDefaultAPIVersions(t *testing.T) {
	got := DefaultAPIVersions()
	for _, want := range []string{"v1", "apps/v1", "apiextensions.k8s.io/v1"} {
		if !slices.Contains(got, want) {
			t.Errorf("DefaultAPIVersions() lacks %s", want)
		}
	}
	got[0] = "changed"
	if DefaultAPIVersions()[0] == "changed" {
		t.Error("DefaultAPIVersions() returns a shared slice")
	}
}
