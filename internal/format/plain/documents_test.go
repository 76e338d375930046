package plain

import (
	"context"
	"crypto/sha256"
	"io/fs"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/rukpak/rukpak/pkg/failure"
	"github.com/rukpak/rukpak/pkg/format"
)

// objectsBothWays returns f.Objects(fsys) and, when ReadsDocuments takes
// fsys, fails the test unless ObjectsParsedBy (parsing with
// ParseDocuments) returns the same objects or the same error.
func objectsBothWays(t *testing.T, f *Format, fsys fs.FS, cfg format.Config) ([]*unstructured.Unstructured, error) {
	t.Helper()
	want, wantErr := f.Objects(context.Background(), fsys, cfg)
	if !ReadsDocuments(fsys) {
		return want, wantErr
	}
	calls := 0
	got, err := f.ObjectsParsedBy(context.Background(), fsys, cfg, func(ctx context.Context, docs []Document) ([]Parsed, error) {
		calls++
		return ParseDocuments(ctx, fsys, docs)
	})
	if calls > 1 {
		t.Errorf("ObjectsParsedBy parsed in %d calls, want one", calls)
	}
	switch {
	case wantErr != nil || err != nil:
		if wantErr == nil || err == nil || err.Error() != wantErr.Error() || failure.Reason(err, "") != failure.Reason(wantErr, "") {
			t.Errorf("ObjectsParsedBy: %v (%s); Objects: %v (%s)", err, failure.Reason(err, "-"), wantErr, failure.Reason(wantErr, "-"))
		}
	case !reflect.DeepEqual(got, want):
		t.Errorf("ObjectsParsedBy objects differ:\n%v\nObjects:\n%v", got, want)
	}
	return want, wantErr
}

func TestReadsDocuments(t *testing.T) {
	for _, tc := range []struct {
		name string
		fsys fstest.MapFS
		want bool
	}{
		{"YAML manifests", fstest.MapFS{"manifests/a.yaml": file(cm("a")), "manifests/sub/b.yml": file(cm("b")), "manifests/c.txt": file("x")}, true},
		{"a JSON manifest", fstest.MapFS{"manifests/a.yaml": file(cm("a")), "manifests/b.json": file("{}")}, false},
		{"a kustomization", fstest.MapFS{"kustomization.yaml": file("resources: [manifests/a.yaml]\n"), "manifests/a.yaml": file(cm("a"))}, false},
		{"no manifests directory", fstest.MapFS{"a.yaml": file(cm("a"))}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ReadsDocuments(tc.fsys); got != tc.want {
				t.Fatalf("ReadsDocuments = %v, want %v", got, tc.want)
			}
		})
	}
}

// The documents handed to parse are the non-empty ones, in file and
// document order, with the digests of their bytes.
func TestObjectsParsedByDocuments(t *testing.T) {
	a := "# only a comment\n---\n" + cm("a") + "---\n---\n" + cm("b")
	fsys := fstest.MapFS{"manifests/1.yaml": file(a), "manifests/2.yaml": file(cm("c"))}
	var seen []Document
	objs, err := New().ObjectsParsedBy(context.Background(), fsys, format.Config{}, func(ctx context.Context, docs []Document) ([]Parsed, error) {
		seen = docs
		return ParseDocuments(ctx, fsys, docs)
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(objs); strings.Join(got, ",") != "a,b,c" {
		t.Fatalf("names %v", got)
	}
	var texts []string
	for _, d := range seen {
		data := fsys[d.Path].Data[d.Offset : d.Offset+d.Size]
		if sha256.Sum256(data) != d.SHA256 {
			t.Errorf("%s at %d: digest is not that of its bytes", d.Path, d.Offset)
		}
		texts = append(texts, d.Path+":"+strings.TrimPrefix(string(data), "---\n"))
	}
	want := []string{"manifests/1.yaml:" + cm("a"), "manifests/1.yaml:" + cm("b"), "manifests/2.yaml:" + cm("c")}
	if !reflect.DeepEqual(texts, want) {
		t.Fatalf("documents %q, want %q", texts, want)
	}
}

// A document whose bytes changed after they were split off is not parsed.
func TestParseDocumentsChecksDigests(t *testing.T) {
	fsys := fstest.MapFS{"manifests/a.yaml": file(cm("a"))}
	doc := Document{Path: "manifests/a.yaml", Size: int64(len(cm("a"))), SHA256: sha256.Sum256([]byte(cm("b")))}
	if _, err := ParseDocuments(context.Background(), fsys, []Document{doc}); err == nil || !strings.Contains(err.Error(), "changed while it was read") {
		t.Fatalf("error = %v", err)
	}
	doc.SHA256 = sha256.Sum256([]byte(cm("a")))
	parsed, err := ParseDocuments(context.Background(), fsys, []Document{doc})
	if err != nil || len(parsed) != 1 || parsed[0].Err != "" {
		t.Fatalf("parsed %v, %v", parsed, err)
	}
}

// TestBlockScalarsAsKubectlReads: a block scalar that ends a document has
// the line breaks kubectl apply -f sends (apimachinery's YAML decoder,
// which ends every line with one), the file's last line too.
func TestBlockScalarsAsKubectlReads(t *testing.T) {
	stream := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: middle}\ndata:\n  keep: |+\n    x\n\n---\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: clipped}\ndata:\n  clip: |\n    y\n---\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: last}\ndata:\n  clip: |\n    z"
	for _, tc := range []struct{ name, data string }{
		{"without a line break at the end", stream},
		{"with a line break at the end", stream + "\n"},
		{"kept, with a line break at the end", strings.TrimSuffix(stream, "clip: |\n    z") + "keep: |+\n    z\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := map[string]map[string]any{}
			dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(tc.data), 4096)
			for {
				var u unstructured.Unstructured
				if err := dec.Decode(&u.Object); err != nil {
					break
				}
				want[u.GetName()], _, _ = unstructured.NestedMap(u.Object, "data")
			}
			if len(want) != 3 {
				t.Fatalf("kubectl's decoder read %d objects, want 3", len(want))
			}
			objs, err := objectsBothWays(t, New(), fstest.MapFS{"manifests/a.yaml": file(tc.data)}, format.Config{})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range objs {
				got, _, _ := unstructured.NestedMap(o.Object, "data")
				if !reflect.DeepEqual(got, want[o.GetName()]) {
					t.Errorf("%s: data %q, kubectl sends %q", o.GetName(), got, want[o.GetName()])
				}
			}
		})
	}
}
