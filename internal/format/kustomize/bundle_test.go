package kustomize

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// TestBundleRead reads paths in order from one bundle: each read is
// counted once against the limits, and a refusal is kept.
func TestBundleRead(t *testing.T) {
	fsys := fstest.MapFS{
		"a":           file("12345"),
		"b":           file("12345"),
		"c":           file("1"),
		"big":         file(strings.Repeat("x", 11)),
		"dir/f+1.21+": file("ok"),
		"link":        &fstest.MapFile{Data: []byte("a"), Mode: fs.ModeSymlink},
		"linkdir":     &fstest.MapFile{Data: []byte("dir"), Mode: fs.ModeSymlink},
	}
	tests := []struct {
		name   string
		reads  []string
		limits Limits
		// want is a part of the last read's error, "" for none; refused
		// whether the bundle keeps it as a refusal.
		want    string
		refused bool
	}{
		{name: "any name", reads: []string{"dir/f+1.21+"}},
		{name: "a file read again is counted once", reads: []string{"a", "a", "a", "b"}, limits: Limits{MaxFileBytes: 10, MaxTotalBytes: 10, MaxFiles: 2}},
		{name: "more files than the limit", reads: []string{"a", "b", "c"}, limits: Limits{MaxFileBytes: 10, MaxTotalBytes: 100, MaxFiles: 2},
			want: "c: the build reads more than 2 files", refused: true},
		{name: "more bytes than the limit", reads: []string{"a", "b", "c"}, limits: Limits{MaxFileBytes: 10, MaxTotalBytes: 10, MaxFiles: 10},
			want: "c: file takes what the build reads over the limit of 10 bytes in total", refused: true},
		{name: "a file over the limit", reads: []string{"big"}, want: "big: file is over the limit of 10 bytes per file", refused: true},
		{name: "a symlink", reads: []string{"link"}, want: "link: not a regular file", refused: true},
		{name: "below a symlink", reads: []string{"linkdir/f+1.21+"}, want: "linkdir: not a regular file", refused: true},
		{name: "missing", reads: []string{"none"}, want: "file does not exist"},
		{name: "out of the bundle", reads: []string{"../a"}, want: "file does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			limits := tt.limits
			if limits == (Limits{}) {
				limits = Limits{MaxFileBytes: 10, MaxTotalBytes: 100, MaxFiles: 10}
			}
			b := newBundle(context.Background(), fsys, limits)
			var err error
			for _, p := range tt.reads {
				if _, err = b.read(p); err != nil {
					break
				}
			}
			if tt.want == "" {
				if err != nil || b.err() != nil {
					t.Fatalf("read error = %v, bundle error = %v; want none", err, b.err())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("read error = %v, want %q", err, tt.want)
			}
			f := failure.As(b.err())
			if tt.refused != (f != nil) {
				t.Fatalf("bundle error = %v, want a refusal: %v", b.err(), tt.refused)
			}
			if f != nil && f.Reason != v1alpha2.ReasonInvalidContent {
				t.Errorf("reason = %s, want InvalidContent", f.Reason)
			}
		})
	}
}

// TestFileSystem checks the file system kustomize sees: the bundle under
// mountDir, with its own names.
func TestFileSystem(t *testing.T) {
	fsys := fstest.MapFS{
		"kustomization.yaml": file(""),
		"c+1.21+/x.yaml":     file("x"),
		"c+1.21+/y.yml":      file("y"),
		"link":               &fstest.MapFile{Mode: fs.ModeSymlink},
	}
	f := fileSystem{b: newBundle(context.Background(), fsys, testLimits)}
	if d, name, err := f.CleanedAbs("/bundle/c+1.21+/../c+1.21+/x.yaml"); err != nil || d != "/bundle/c+1.21+" || name != "x.yaml" {
		t.Errorf("CleanedAbs(file) = %q, %q, %v", d, name, err)
	}
	if d, name, err := f.CleanedAbs("/bundle/c+1.21+"); err != nil || d != "/bundle/c+1.21+" || name != "" {
		t.Errorf("CleanedAbs(dir) = %q, %q, %v", d, name, err)
	}
	if _, _, err := f.CleanedAbs("/bundle/none"); err == nil || err.Error() != "'/bundle/none' doesn't exist" || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("CleanedAbs(missing) error = %v", err)
	}
	if names, err := f.ReadDir("/"); err != nil || strings.Join(names, ",") != "bundle" {
		t.Errorf("ReadDir(/) = %v, %v", names, err)
	}
	if names, err := f.ReadDir("/bundle"); err != nil || strings.Join(names, ",") != "c+1.21+,kustomization.yaml,link" {
		t.Errorf("ReadDir(/bundle) = %v, %v", names, err)
	}
	if got, err := f.Glob("/bundle/c+1.21+/*.yaml"); err != nil || strings.Join(got, ",") != "/bundle/c+1.21+/x.yaml" {
		t.Errorf("Glob = %v, %v", got, err)
	}
	if !f.Exists("/bundle/link") || f.IsDir("/bundle/link") || f.Exists("/etc") || !f.IsDir("/bundle") {
		t.Error("Exists or IsDir is wrong for a symlink, a path out of the bundle or the bundle")
	}
	var walked []string
	err := f.Walk("/bundle", func(p string, _ fs.FileInfo, err error) error {
		walked = append(walked, p)
		return err
	})
	if err != nil || len(walked) != 6 {
		t.Errorf("Walk = %v, %v", walked, err)
	}
	if err := f.WriteFile("/bundle/new", nil); !errors.Is(err, errReadOnly) {
		t.Errorf("WriteFile error = %v, want read-only", err)
	}
}
