package upload

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeTree creates files (path → content) under a new directory; a path
// ending in "*" is made executable (without the star).
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, content := range files {
		mode := os.FileMode(0o644)
		if name, ok := strings.CutSuffix(p, "*"); ok {
			p, mode = name, 0o755
		}
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func pack(t *testing.T, dir string) *Archive {
	t.Helper()
	a, err := Pack(dir)
	if err != nil {
		t.Fatalf("Pack: %v", err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a
}

var tree = map[string]string{
	"manifests/a.yaml": "kind: A",
	"manifests/b.yaml": "kind: B",
	"bin/run.sh*":      "#!/bin/sh",
	"README":           "hi",
}

func TestPackDeterminism(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, dir string)
		same   bool
	}{
		{name: "packed twice", change: func(*testing.T, string) {}, same: true},
		{name: "modification times changed", same: true, change: func(t *testing.T, dir string) {
			future := time.Now().Add(time.Hour)
			for _, p := range []string{"README", "manifests", "manifests/a.yaml"} {
				if err := os.Chtimes(filepath.Join(dir, p), future, future); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{name: "permissions other than the executable bit changed", same: true, change: func(t *testing.T, dir string) {
			if err := os.Chmod(filepath.Join(dir, "README"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "content changed", change: func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "README"), []byte("ho"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "executable bit changed", change: func(t *testing.T, dir string) {
			if err := os.Chmod(filepath.Join(dir, "README"), 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "empty directory added", change: func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "file renamed", change: func(t *testing.T, dir string) {
			if err := os.Rename(filepath.Join(dir, "README"), filepath.Join(dir, "README.md")); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeTree(t, tree)
			before := pack(t, dir)
			tt.change(t, dir)
			after := pack(t, dir)
			if same := before.Digest == after.Digest; same != tt.same {
				t.Fatalf("digest before %s, after %s; want same=%v", before.Digest, after.Digest, tt.same)
			}
			if _, err := ParseDigest(after.Digest); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestPackEntries(t *testing.T) {
	a := pack(t, writeTree(t, tree))
	zr, err := gzip.NewReader(a)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var got []string
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !hdr.ModTime.Equal(time.Unix(0, 0)) || hdr.Uid != 0 || hdr.Gid != 0 || hdr.Uname != "" || hdr.Gname != "" {
			t.Errorf("%s: mtime %v uid %d gid %d uname %q gname %q, want all zero", hdr.Name, hdr.ModTime, hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname)
		}
		got = append(got, hdr.Name+" "+os.FileMode(hdr.Mode).String())
	}
	want := []string{"README -rw-r--r--", "bin/ -rwxr-xr-x", "bin/run.sh -rwxr-xr-x", "manifests/ -rwxr-xr-x",
		"manifests/a.yaml -rw-r--r--", "manifests/b.yaml -rw-r--r--"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestPackRefusesSymlinks(t *testing.T) {
	dir := writeTree(t, tree)
	if err := os.Symlink("../README", filepath.Join(dir, "manifests", "link")); err != nil {
		t.Fatal(err)
	}
	_, err := Pack(dir)
	want := filepath.Join(dir, "manifests", "link") + " is a symbolic link: only regular files and directories can be uploaded"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Pack error = %v, want one containing %q", err, want)
	}
}

func TestPackFollowsASymlinkedRoot(t *testing.T) {
	dir := writeTree(t, tree)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if a, b := pack(t, dir), pack(t, link); a.Digest != b.Digest {
		t.Fatalf("digest through link %s, want %s", b.Digest, a.Digest)
	}
}

func TestArchiveCloseRemovesTheFile(t *testing.T) {
	a, err := Pack(writeTree(t, tree))
	if err != nil {
		t.Fatal(err)
	}
	name := a.f.Name()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(name); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temporary file %s still exists: %v", name, err)
	}
}
