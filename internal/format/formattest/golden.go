// Package formattest holds what the tests of every bundle format share:
// comparing rendered objects with golden files, one YAML file per object.
package formattest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// unsafeFileChars are the characters of names not kept in golden file names.
var unsafeFileChars = regexp.MustCompile(`[^a-z0-9.-]+`)

// Files renders objs as golden files: name NN_kind_name.yaml, with NN the
// 1-based position (so the apply order is checked too), to content.
func Files(objs []*unstructured.Unstructured) (map[string]string, error) {
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

// CompareGolden compares objs with the golden files of dir. With update,
// it first rewrites dir from objs.
func CompareGolden(t *testing.T, dir string, objs []*unstructured.Unstructured, update bool) {
	t.Helper()
	got, err := Files(objs)
	if err != nil {
		t.Fatal(err)
	}
	if update {
		writeGolden(t, dir, got)
	}
	want := readGolden(t, dir)
	for name, data := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("unexpected object %s (run with -update to regenerate):\n%s", name, data)
		} else if want[name] != data {
			t.Errorf("%s differs from golden file %s:\ngot:\n%s\nwant:\n%s", name, dir, data, want[name])
		}
	}
	for name := range want {
		if _, ok := got[name]; !ok {
			t.Errorf("missing object %s of %s", name, dir)
		}
	}
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
