package archive

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rukpak/rukpak/pkg/failure"
)

const (
	dirStr  = "drwxr-xr-x"
	fileStr = "-rw-r--r-- "
	execStr = "-rwxr-xr-x "
)

func TestUntarTree(t *testing.T) {
	entries := []tentry{
		dirEntry("./"),
		{name: "bin/", typ: '5', mode: 0o700},
		fileWithMode("bin/run", "#!/bin/sh", 0o4755), // setuid dropped
		fileWithMode("./manifests/a.yaml", "kind: A", 0o600),
		fileWithMode("manifests/b.yaml", "kind: B", 0o664),
		symlink("manifests/link.yaml", "a.yaml"),
		symlink("manifests/run", "../bin/run"),
		symlink("top", "./manifests/./"),
		hardlink("manifests/hard.yaml", "manifests/a.yaml"),
		file("again", "1"),
		file("again", "2"),
		symlink("replaced", "manifests"),
		file("replaced", "a file now"),
		file("deep/er/still/f", ""),
		file("manifests/.wh.kept", "not a layer: kept as a file"),
	}
	want := map[string]string{
		"bin":                 dirStr,
		"bin/run":             execStr + "#!/bin/sh",
		"manifests":           dirStr,
		"manifests/a.yaml":    fileStr + "kind: A",
		"manifests/b.yaml":    fileStr + "kind: B",
		"manifests/link.yaml": "L a.yaml",
		"manifests/run":       "L ../bin/run",
		"top":                 "L ./manifests/./",
		"manifests/hard.yaml": fileStr + "kind: A",
		"again":               fileStr + "2",
		"replaced":            fileStr + "a file now",
		"deep":                dirStr,
		"deep/er":             dirStr,
		"deep/er/still":       dirStr,
		"deep/er/still/f":     fileStr,
		"manifests/.wh.kept":  fileStr + "not a layer: kept as a file",
	}
	data := tarBytes(t, entries)
	tests := []struct {
		name  string
		untar func(dir string) error
	}{
		{"Untar", func(dir string) error { return Untar(context.Background(), bytes.NewReader(data), dir, Options{}) }},
		{"UntarGzip", func(dir string) error {
			return UntarGzip(context.Background(), bytes.NewReader(gz(t, data)), dir, Options{})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := tt.untar(dir); err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			if got := tree(t, dir); !maps.Equal(got, want) {
				t.Fatalf("tree =\n%v\nwant\n%v", got, want)
			}
		})
	}
}

func TestWhiteouts(t *testing.T) {
	lower := []tentry{
		file("a/x", "x"), file("a/y", "y"),
		file("b/z", "z"),
		file("c/inside", "i"),
		file("d/e", "e"), file("d/sub/f", "f"),
		file("g", "g"),
		file("o/old", "old"), file("o/sub/old", "old"),
		dirEntry("sub/"), file("sub/x", "x"), symlink("link", "sub"),
	}
	tests := []struct {
		name    string
		upper   []tentry
		want    map[string]string // paths under the top directory given, over the lower tree
		top     string
		wantErr string
	}{
		{name: "file whiteout", top: "a", upper: []tentry{file("a/.wh.x", "")},
			want: map[string]string{"a": dirStr, "a/y": fileStr + "y"}},
		{name: "directory whiteout", top: "b", upper: []tentry{file(".wh.b", "")},
			want: map[string]string{}},
		{name: "opaque directory", top: "d", upper: []tentry{file("d/.wh..wh..opq", ""), file("d/new", "n")},
			want: map[string]string{"d": dirStr, "d/new": fileStr + "n"}},
		{name: "opaque keeps what the layer wrote before it", top: "o",
			upper: []tentry{file("o/keep", "k"), file("o/sub/keep", "k"), file("o/.wh..wh..opq", "")},
			want:  map[string]string{"o": dirStr, "o/keep": fileStr + "k", "o/sub": dirStr, "o/sub/keep": fileStr + "k"}},
		{name: "whiteout of the layer's own file is ignored", top: "n", upper: []tentry{file("n/f", "f"), file("n/.wh.f", "")},
			want: map[string]string{"n": dirStr, "n/f": fileStr + "f"}},
		{name: "whiteout of nothing", top: "none", upper: []tentry{file("none/deeper/.wh.f", "")},
			want: map[string]string{}},
		{name: "file replaces directory", top: "c", upper: []tentry{file("c", "now a file")},
			want: map[string]string{"c": fileStr + "now a file"}},
		{name: "directory replaces file", top: "g", upper: []tentry{file("g/h", "h")},
			want: map[string]string{"g": dirStr, "g/h": fileStr + "h"}},
		{name: "AUFS metadata is skipped", top: ".wh..wh.plnk", upper: []tentry{file(".wh..wh.plnk/1.2", "x")},
			want: map[string]string{}},
		{name: "write through an earlier layer's link", upper: []tentry{file("link/pwned", "x")},
			wantErr: `archive entry "link/pwned": parent "link" is a symbolic link`},
		{name: "whiteout through a link", upper: []tentry{file("link/.wh.x", "")},
			wantErr: `archive entry "link/.wh.x": parent "link" is a symbolic link`},
		{name: "whiteout of dot-dot", upper: []tentry{file("a/.wh...", "")},
			wantErr: `archive entry "a/.wh...": whiteout names no file`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			if err := Untar(ctx, bytes.NewReader(tarBytes(t, lower)), dir, Options{Whiteouts: true}); err != nil {
				t.Fatalf("lower layer: %v", err)
			}
			before := tree(t, dir)
			err := Untar(ctx, bytes.NewReader(tarBytes(t, tt.upper)), dir, Options{Whiteouts: true})
			if tt.wantErr != "" {
				if f := failure.As(err); f == nil || !strings.Contains(f.Message, tt.wantErr) {
					t.Fatalf("error = %v, want a failure containing %q", err, tt.wantErr)
				}
				if _, err := os.Lstat(filepath.Join(dir, "sub", "pwned")); err == nil {
					t.Fatal("wrote through the link")
				}
				return
			}
			if err != nil {
				t.Fatalf("upper layer: %v", err)
			}
			got := tree(t, dir)
			for p, v := range before { // outside top, the lower tree is unchanged
				if p != tt.top && !strings.HasPrefix(p, tt.top+"/") && got[p] != v {
					t.Fatalf("%s = %q, want %q as the lower layer wrote it", p, got[p], v)
				}
			}
			under := map[string]string{}
			for p, v := range got {
				if p == tt.top || strings.HasPrefix(p, tt.top+"/") {
					under[p] = v
				}
			}
			if !maps.Equal(under, tt.want) {
				t.Fatalf("%s holds %v, want %v", tt.top, under, tt.want)
			}
		})
	}
}
