package helm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"testing"
	"testing/fstest"

	"sigs.k8s.io/yaml"
)

// chartFS returns the files of testdata/charts/<name> as a MapFS, each
// under prefix ("" for the root).
func chartFS(t testing.TB, name, prefix string) fstest.MapFS {
	t.Helper()
	root := filepath.Join("testdata", "charts", name)
	files := fstest.MapFS{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		files[path.Join(prefix, filepath.ToSlash(rel))] = &fstest.MapFile{Data: data, Mode: 0o644}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// packChart returns files as a gzipped tar archive, in path order, the way
// helm package lays a chart out: every entry under the chart's directory.
func packChart(t testing.TB, files fstest.MapFS) []byte {
	t.Helper()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, n := range names {
		f := files[n]
		hdr := &tar.Header{Name: n, Mode: 0o644, Size: int64(len(f.Data)), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.Data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// parseValues decodes a YAML values document; "" is no values.
func parseValues(t testing.TB, doc string) map[string]any {
	t.Helper()
	if doc == "" {
		return nil
	}
	var v map[string]any
	if err := yaml.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatalf("values %q: %v", doc, err)
	}
	return v
}
