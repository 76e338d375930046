package plain

import (
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
	"github.com/rukpak/rukpak/pkg/format"
)

// FuzzObjects feeds arbitrary bytes as a YAML and as a JSON manifest: the
// result must be objects with a kind and a name, or an InvalidContent
// failure, never a panic; and the same when the YAML's documents are
// parsed in one call (ObjectsParsedBy).
func FuzzObjects(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "bundles", "*", "manifests", "*.*"))
	for _, s := range seeds {
		if data, err := os.ReadFile(s); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{"", "---", "...\n---\n", "a: [", "- x", "{}", "[]", "null", "\xff", "&a [*a, *a]",
		"kind: List\nitems: [1]", "--- {apiVersion: v1, kind: X, metadata: {name: n}}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, name := range []string{"manifests/f.yaml", "manifests/f.json"} {
			fsys := fstest.MapFS{name: &fstest.MapFile{Data: data}}
			objs, err := objectsBothWays(t, New(), fsys, format.Config{InstallNamespace: "ns"})
			if err != nil {
				if r := failure.Reason(err, ""); r != v1alpha2.ReasonInvalidContent {
					t.Fatalf("%s: error %v has reason %q", name, err, r)
				}
				continue
			}
			for _, o := range objs {
				if o.GetKind() == "" || o.GetName() == "" || o.GetAPIVersion() == "" {
					t.Fatalf("%s: object without apiVersion, kind or name: %v", name, o.Object)
				}
			}
		}
	})
}
