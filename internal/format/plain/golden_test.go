package plain

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/rukpak/rukpak/internal/format"
)

// Regenerate the golden files with: go test ./internal/format/plain -update
var update = flag.Bool("update", false, "rewrite testdata/golden from testdata/bundles")

// TestObjectsGolden reads each bundle of testdata/bundles/<case> and
// compares its objects with testdata/golden/<case>/NN_kind_name.yaml.
func TestObjectsGolden(t *testing.T) {
	cases, err := os.ReadDir(filepath.Join("testdata", "bundles"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.Name(), func(t *testing.T) {
			objs, err := New().Objects(context.Background(), os.DirFS(filepath.Join("testdata", "bundles", c.Name())),
				format.Config{InstallNamespace: "install-ns", ReleaseName: "release"})
			if err != nil {
				t.Fatalf("Objects() error = %v", err)
			}
			got, err := goldenFiles(objs)
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join("testdata", "golden", c.Name())
			if *update {
				writeGolden(t, dir, got)
			}
			want := readGolden(t, dir)
			for name, data := range got {
				if _, ok := want[name]; !ok {
					t.Errorf("unexpected object %s (run with -update to regenerate):\n%s", name, data)
				} else if want[name] != data {
					t.Errorf("%s differs from golden file:\ngot:\n%s\nwant:\n%s", name, data, want[name])
				}
			}
			for name := range want {
				if _, ok := got[name]; !ok {
					t.Errorf("missing object %s", name)
				}
			}
		})
	}
}

// unsafeFileChars are the characters of names not kept in golden file names.
var unsafeFileChars = regexp.MustCompile(`[^a-z0-9.-]+`)

// goldenFiles renders objs as golden files: name NN_kind_name.yaml, with NN
// the 1-based position, to content.
func goldenFiles(objs []*unstructured.Unstructured) (map[string]string, error) {
	files := make(map[string]string, len(objs))
	for i, obj := range objs {
		data, err := yaml.Marshal(obj.Object)
		if err != nil {
			return nil, fmt.Errorf("marshaling object %d: %w", i+1, err)
		}
		name := fmt.Sprintf("%02d_%s_%s.yaml", i+1, strings.ToLower(obj.GetKind()),
			unsafeFileChars.ReplaceAllString(strings.ToLower(obj.GetName()), "_"))
		files[name] = string(data)
	}
	return files, nil
}

// writeGolden replaces the files of dir with files.
func writeGolden(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// readGolden returns the files of dir by name.
func readGolden(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("reading golden files (run with -update to create them): %v", err)
	}
	files := make(map[string]string, len(entries))
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(data)
	}
	return files
}
