package plain

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
	"github.com/rukpak/rukpak/pkg/format"
)

// cm returns a ConfigMap manifest.
func cm(name string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n", name)
}

// file returns a MapFS file holding s.
func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

func TestObjectsErrors(t *testing.T) {
	tests := []struct {
		name   string
		fsys   fstest.MapFS
		limits Limits
		want   []string
	}{
		{
			name: "no manifests directory",
			fsys: fstest.MapFS{"other/a.yaml": file(cm("a"))},
			want: []string{"bundle has no manifests/ directory"},
		},
		{
			name: "manifests is a file",
			fsys: fstest.MapFS{"manifests": file(cm("a"))},
			want: []string{"manifests", "is a file"},
		},
		{
			name: "empty manifests directory",
			fsys: fstest.MapFS{"manifests": &fstest.MapFile{Mode: fs.ModeDir | 0o755}},
			want: []string{"bundle has no objects in manifests/"},
		},
		{
			name: "only comments and ignored files",
			fsys: fstest.MapFS{
				"manifests/a.yaml":  file("# nothing\n---\n---\n"),
				"manifests/b.json":  file("  \n"),
				"manifests/c.txt":   file(cm("c")),
				"manifests/d.json":  file("null"),
				"elsewhere/cm.yaml": file(cm("e")),
			},
			want: []string{"no objects"},
		},
		{
			name: "invalid YAML",
			fsys: fstest.MapFS{"manifests/broken.yaml": file("a: [\n")},
			want: []string{"manifests/broken.yaml: document 1 (line 1): invalid YAML"},
		},
		{
			name: "invalid YAML in the third document",
			fsys: fstest.MapFS{"manifests/broken.yaml": file("# c\n---\n" + cm("a") + "---\n---\n" + "metadata:\n  name: x\n bad: indent\n")},
			want: []string{"manifests/broken.yaml: document 3 (line 8): invalid YAML", "line 10"},
		},
		{
			name: "invalid JSON",
			fsys: fstest.MapFS{"manifests/x.json": file("{\n\"apiVersion\": \"v1\",\n\"kind\": }")},
			want: []string{"manifests/x.json: document 1: invalid JSON at line 3"},
		},
		{
			name: "truncated JSON",
			fsys: fstest.MapFS{"manifests/x.json": file(`{"apiVersion": "v1"`)},
			want: []string{"manifests/x.json: document 1: invalid JSON"},
		},
		{
			name: "YAML in a JSON file",
			fsys: fstest.MapFS{"manifests/x.json": file(cm("a"))},
			want: []string{"manifests/x.json", "invalid JSON"},
		},
		{
			name: "YAML document is a list",
			fsys: fstest.MapFS{"manifests/a.yaml": file(cm("a") + "---\n- a\n- b\n")},
			want: []string{"manifests/a.yaml: document 2 (line 5): not an object but a list"},
		},
		{
			name: "YAML document is a string",
			fsys: fstest.MapFS{"manifests/a.yaml": file("hello\n")},
			want: []string{"manifests/a.yaml: document 1", "not an object but a string"},
		},
		{
			name: "JSON document is a number",
			fsys: fstest.MapFS{"manifests/a.json": file("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\"}}\n42")},
			want: []string{"manifests/a.json: document 2 (line 2): not an object but a number"},
		},
		{
			name: "missing apiVersion",
			fsys: fstest.MapFS{"manifests/a.yaml": file("kind: ConfigMap\nmetadata:\n  name: a\n")},
			want: []string{"manifests/a.yaml: document 1", "object has no apiVersion"},
		},
		{
			name: "empty apiVersion",
			fsys: fstest.MapFS{"manifests/a.yaml": file("apiVersion: ''\nkind: ConfigMap\nmetadata:\n  name: a\n")},
			want: []string{"manifests/a.yaml", "object has no apiVersion"},
		},
		{
			name: "invalid apiVersion",
			fsys: fstest.MapFS{"manifests/a.yaml": file("apiVersion: a/b/c\nkind: ConfigMap\nmetadata:\n  name: a\n")},
			want: []string{"manifests/a.yaml", `invalid apiVersion "a/b/c"`},
		},
		{
			name: "missing kind",
			fsys: fstest.MapFS{"manifests/a.yaml": file("apiVersion: v1\nmetadata:\n  name: a\n")},
			want: []string{"manifests/a.yaml: document 1", "object has no kind"},
		},
		{
			name: "kind is not a string",
			fsys: fstest.MapFS{"manifests/a.yaml": file("apiVersion: v1\nkind: [x]\nmetadata:\n  name: a\n")},
			want: []string{"manifests/a.yaml", "kind is a list, not a string"},
		},
		{
			name: "missing metadata",
			fsys: fstest.MapFS{"manifests/a.yaml": file("apiVersion: v1\nkind: ConfigMap\n")},
			want: []string{"manifests/a.yaml: document 1", "object has no metadata.name"},
		},
		{
			name: "missing metadata.name",
			fsys: fstest.MapFS{"manifests/a.yaml": file("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: a-\n")},
			want: []string{"manifests/a.yaml: document 1", "object has no metadata.name"},
		},
		{
			name: "metadata is not an object",
			fsys: fstest.MapFS{"manifests/a.yaml": file("apiVersion: v1\nkind: ConfigMap\nmetadata: a\n")},
			want: []string{"manifests/a.yaml", "metadata is a string, not an object"},
		},
		{
			name: "metadata.name is not a string",
			fsys: fstest.MapFS{"manifests/a.yaml": file("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: 12\n")},
			want: []string{"manifests/a.yaml", "metadata.name is a number, not a string"},
		},
		{
			name: "metadata.namespace is not a string",
			fsys: fstest.MapFS{"manifests/a.yaml": file("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: true\n")},
			want: []string{"manifests/a.yaml", "metadata.namespace is a boolean, not a string"},
		},
		{
			name: "List item without a name",
			fsys: fstest.MapFS{"manifests/l.yaml": file("apiVersion: v1\nkind: List\nitems:\n" +
				"- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n- {apiVersion: v1, kind: ConfigMap}\n")},
			want: []string{"manifests/l.yaml: document 1 (line 1): items[1]: object has no metadata.name"},
		},
		{
			name: "List item is not an object",
			fsys: fstest.MapFS{"manifests/l.json": file(`{"apiVersion": "v1", "kind": "List", "items": ["x"]}`)},
			want: []string{"manifests/l.json: document 1 (line 1): items[0]: not an object but a string"},
		},
		{
			name: "List items is not a list",
			fsys: fstest.MapFS{"manifests/l.yaml": file("apiVersion: v1\nkind: List\nitems: {}\n")},
			want: []string{"manifests/l.yaml", "items of List is an object, not a list"},
		},
		{
			name: "duplicate in two files",
			fsys: fstest.MapFS{"manifests/a.yaml": file(cm("dup")), "manifests/b.yaml": file(cm("dup"))},
			want: []string{"object ConfigMap/dup defined twice: in manifests/a.yaml and manifests/b.yaml"},
		},
		{
			name: "duplicate in one file",
			fsys: fstest.MapFS{"manifests/a.yaml": file(cm("dup") + "---\n" + cm("other") + "---\n" + cm("dup"))},
			want: []string{"object ConfigMap/dup defined twice: in manifests/a.yaml: document 1 (line 1) and manifests/a.yaml: document 3 (line 10)"},
		},
		{
			name: "duplicate across versions and a List",
			fsys: fstest.MapFS{
				"manifests/a.yaml": file("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: team\n"),
				"manifests/b.json": file(`{"kind": "List", "items": [{"apiVersion": "apps/v1beta1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "team"}}]}`),
			},
			want: []string{"object Deployment.apps/web (namespace team) defined twice: in manifests/a.yaml and manifests/b.json"},
		},
		{
			name: "duplicate once placed in the install namespace",
			fsys: fstest.MapFS{
				"manifests/a.yaml": file(cm("dup")),
				"manifests/b.yaml": file(cm("dup") + "  namespace: install-ns\n"),
			},
			want: []string{"object ConfigMap/dup (namespace install-ns) defined twice: in manifests/a.yaml and manifests/b.yaml"},
		},
		{
			name:   "file over the size limit",
			fsys:   fstest.MapFS{"manifests/a.yaml": file(cm("a")), "manifests/big.yaml": file(cm("big") + "data:\n  k: " + strings.Repeat("x", 100) + "\n")},
			limits: Limits{MaxFileBytes: 100},
			want:   []string{"manifests/big.yaml", "over the limit of 100 bytes per manifest file"},
		},
		{
			name: "total over the size limit",
			fsys: fstest.MapFS{
				"manifests/a.yaml": file(cm("aaaa")),
				"manifests/b.yaml": file(cm("bbbb")),
				"manifests/c.yaml": file(cm("cccc")),
			},
			limits: Limits{MaxTotalBytes: 120},
			want:   []string{"manifests/c.yaml", "over the limit of 120 bytes in total"},
		},
		{
			name: "too many objects",
			fsys: fstest.MapFS{
				"manifests/a.yaml": file(cm("a") + "---\n" + cm("b")),
				"manifests/b.json": file(`{"kind": "List", "items": [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "c"}}]}`),
			},
			limits: Limits{MaxObjects: 2},
			want:   []string{"manifests/b.json", "more than 2 objects"},
		},
		{
			name: "too many documents, even if they hold no objects",
			fsys: fstest.MapFS{
				"manifests/a.yaml": file(cm("a") + "---\n~\n---\nnull\n"),
				"manifests/b.yaml": file("---\n~\n---\n~\n---\n" + cm("b")),
			},
			limits: Limits{MaxObjects: 4},
			want:   []string{"manifests/b.yaml: bundle has more than 4 YAML documents"},
		},
		{
			name: "symlink named like a manifest",
			fsys: fstest.MapFS{
				"manifests/a.yaml":    file(cm("a")),
				"manifests/link.yaml": &fstest.MapFile{Data: []byte("a.yaml"), Mode: fs.ModeSymlink},
			},
			want: []string{"manifests/link.yaml: not a regular file"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := New()
			f.Limits = tt.limits
			objs, err := objectsBothWays(t, f, tt.fsys, format.Config{InstallNamespace: "install-ns"})
			if err == nil {
				t.Fatalf("Objects() = %d objects, want an error", len(objs))
			}
			t.Logf("error: %v", err)
			if objs != nil {
				t.Errorf("Objects() returned objects with an error")
			}
			if got := failure.Reason(err, "NotTerminal"); got != v1alpha2.ReasonInvalidContent {
				t.Errorf("reason = %s, want %s (err: %v)", got, v1alpha2.ReasonInvalidContent, err)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestObjectsDistinct(t *testing.T) {
	tests := []struct {
		name      string
		fsys      fstest.MapFS
		limits    Limits
		wantNames []string
	}{
		{
			name:      "same name, other namespace",
			fsys:      fstest.MapFS{"manifests/a.yaml": file(cm("x") + "---\n" + cm("x") + "  namespace: other\n")},
			wantNames: []string{"x", "x"},
		},
		{
			name:      "same name, other kind",
			fsys:      fstest.MapFS{"manifests/a.yaml": file(cm("x") + "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: x\n")},
			wantNames: []string{"x", "x"},
		},
		{
			name:      "same kind and name, other group",
			fsys:      fstest.MapFS{"manifests/a.yaml": file(cm("x") + "---\napiVersion: example.com/v1\nkind: ConfigMap\nmetadata:\n  name: x\n")},
			wantNames: []string{"x", "x"},
		},
		{
			name:      "kind ending in List without items is an object",
			fsys:      fstest.MapFS{"manifests/a.yaml": file("apiVersion: example.com/v1\nkind: AllowList\nmetadata:\n  name: allow\nspec: {}\n")},
			wantNames: []string{"allow"},
		},
		{
			name:      "CRLF line endings and a document end marker",
			fsys:      fstest.MapFS{"manifests/a.yaml": file(strings.ReplaceAll(cm("a")+"...\n# trailing\n---\n"+cm("b"), "\n", "\r\n"))},
			wantNames: []string{"a", "b"},
		},
		{
			name:      "JSON stream",
			fsys:      fstest.MapFS{"manifests/a.json": file(`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}} {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}}`)},
			wantNames: []string{"a", "b"},
		},
		{
			name:      "bundle exactly at the limits",
			fsys:      fstest.MapFS{"manifests/a.yaml": file(cm("a"))},
			limits:    Limits{MaxFileBytes: int64(len(cm("a"))), MaxTotalBytes: int64(len(cm("a"))), MaxObjects: 1},
			wantNames: []string{"a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &Format{Limits: tt.limits}
			objs, err := objectsBothWays(t, f, tt.fsys, format.Config{InstallNamespace: "install-ns"})
			if err != nil {
				t.Fatalf("Objects() error = %v", err)
			}
			if got := names(objs); strings.Join(got, ",") != strings.Join(tt.wantNames, ",") {
				t.Errorf("names = %v, want %v", got, tt.wantNames)
			}
		})
	}
}

// names returns the names of objs.
func names(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	return out
}

func TestObjectsKeepsIntegersAndNamespaces(t *testing.T) {
	fsys := fstest.MapFS{"manifests/d.yaml": file("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  replicas: 3\n  ratio: 0.5\n")}
	objs, err := objectsBothWays(t, New(), fsys, format.Config{InstallNamespace: "install-ns"})
	if err != nil {
		t.Fatal(err)
	}
	if n, found, err := unstructured.NestedInt64(objs[0].Object, "spec", "replicas"); err != nil || !found || n != 3 {
		t.Errorf("spec.replicas = %v, %v, %v; want int64 3", n, found, err)
	}
	if r, found, err := unstructured.NestedFloat64(objs[0].Object, "spec", "ratio"); err != nil || !found || r != 0.5 {
		t.Errorf("spec.ratio = %v, %v, %v; want 0.5", r, found, err)
	}
	if ns := objs[0].GetNamespace(); ns != "" {
		t.Errorf("namespace = %q, want it unset", ns)
	}
}

func TestObjectsCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := New().Objects(ctx, fstest.MapFS{"manifests/a.yaml": file(cm("a"))}, format.Config{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
	if failure.As(err) != nil {
		t.Fatalf("cancellation must not be a terminal failure: %v", err)
	}
}

// failingFS fails to open one file.
type failingFS struct {
	fstest.MapFS
	fail string
}

// Open fails for fs.fail.
func (f failingFS) Open(name string) (fs.File, error) {
	if name == f.fail {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errors.New("disk on fire")}
	}
	return f.MapFS.Open(name)
}

func TestObjectsReadErrorIsNotTerminal(t *testing.T) {
	fsys := failingFS{MapFS: fstest.MapFS{"manifests/a.yaml": file(cm("a"))}, fail: "manifests/a.yaml"}
	_, err := New().Objects(context.Background(), fsys, format.Config{})
	if err == nil || failure.As(err) != nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("error = %v, want a plain wrapped read error", err)
	}
}
