package source

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// fakeSource is a test double of Source: it writes the files registered for
// the URL of an http source. A value starting with "symlink:" becomes a
// symlink to the rest; a URL starting with "error:" fails with the rest.
type fakeSource map[string]map[string]string

func (f fakeSource) Resolve(_ context.Context, src v1alpha2.BundleSource) (v1alpha2.BundleSource, error) {
	return src, nil
}

func (f fakeSource) Unpack(_ context.Context, src v1alpha2.BundleSource, dir string) error {
	if msg, ok := strings.CutPrefix(src.HTTP.URL, "error:"); ok {
		return errors.New(msg)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		return errors.New("dir is not an existing empty directory")
	}
	for name, content := range f[src.HTTP.URL] {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if target, ok := strings.CutPrefix(content, "symlink:"); ok {
			if err := os.Symlink(target, p); err != nil {
				return err
			}
			continue
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			return err
		}
	}
	return nil
}

var _ Source = fakeSource(nil)

func src(url, dest string) v1alpha2.BundleSource {
	return v1alpha2.BundleSource{Type: v1alpha2.SourceTypeHTTP, HTTP: &v1alpha2.HTTPSource{URL: url}, Destination: dest}
}

// readTree returns every file under root by slash path; directories map to "/".
func readTree(t *testing.T, root string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			got[filepath.ToSlash(rel)] = "/"
			return nil
		}
		b, err := os.ReadFile(p)
		got[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestRegistryUnpack(t *testing.T) {
	fake := fakeSource{
		"a":      {"manifests/a.yaml": "a"},
		"b":      {"manifests/b.yaml": "b"},
		"a-dup":  {"manifests/a.yaml": "other a"},
		"script": {"bin/run.sh": "echo", "README": "r"},
		"file-x": {"x": "file"},
		"dir-x":  {"x/y": "in dir"},
		"empty":  {},
		"link":   {"ok": "1", "manifests/link": "symlink:/etc/passwd"},
	}
	reg := Registry{v1alpha2.SourceTypeHTTP: fake}
	tests := []struct {
		name       string
		srcs       []v1alpha2.BundleSource
		want       map[string]string
		wantReason string
		wantMsg    string
	}{
		{"no sources", nil, map[string]string{}, "", ""},
		{"one source at the root", []v1alpha2.BundleSource{src("a", "")},
			map[string]string{"manifests": "/", "manifests/a.yaml": "a"}, "", ""},
		{"directories merge", []v1alpha2.BundleSource{src("a", ""), src("b", "")},
			map[string]string{"manifests": "/", "manifests/a.yaml": "a", "manifests/b.yaml": "b"}, "", ""},
		{"destinations", []v1alpha2.BundleSource{src("a", "one"), src("a", "two/deep")},
			map[string]string{"one": "/", "one/manifests": "/", "one/manifests/a.yaml": "a", "two": "/", "two/deep": "/", "two/deep/manifests": "/", "two/deep/manifests/a.yaml": "a"}, "", ""},
		{"destination is cleaned", []v1alpha2.BundleSource{src("script", "./x//y/../z/")},
			map[string]string{"x": "/", "x/z": "/", "x/z/bin": "/", "x/z/bin/run.sh": "echo", "x/z/README": "r"}, "", ""},
		{"empty source still creates its destination", []v1alpha2.BundleSource{src("empty", "d")},
			map[string]string{"d": "/"}, "", ""},
		{"same file twice", []v1alpha2.BundleSource{src("b", ""), src("a", ""), src("a-dup", "")}, nil,
			v1alpha2.ReasonSourceConflict, "sources 1 (http) and 2 (http) both write manifests/a.yaml"},
		{"same file via destination", []v1alpha2.BundleSource{src("a", ""), src("b", "manifests/.."), src("a", "")}, nil,
			v1alpha2.ReasonSourceConflict, "sources 0 (http) and 2 (http) both write manifests/a.yaml"},
		{"file where a directory is", []v1alpha2.BundleSource{src("dir-x", ""), src("file-x", "")}, nil,
			v1alpha2.ReasonSourceConflict, "sources 0 (http) and 1 (http) both write x"},
		{"directory where a file is", []v1alpha2.BundleSource{src("file-x", ""), src("dir-x", "")}, nil,
			v1alpha2.ReasonSourceConflict, "sources 0 (http) and 1 (http) both write x"},
		{"destination through a file", []v1alpha2.BundleSource{src("file-x", ""), src("a", "x/sub")}, nil,
			v1alpha2.ReasonSourceConflict, "sources 0 (http) and 1 (http) both write x"},
		{"absolute destination", []v1alpha2.BundleSource{src("a", "/etc")}, nil,
			v1alpha2.ReasonUnpackFailed, `source 0 (http): destination: path "/etc" is absolute`},
		{"escaping destination", []v1alpha2.BundleSource{src("a", ""), src("b", "../up")}, nil,
			v1alpha2.ReasonUnpackFailed, `source 1 (http): destination: path "../up" escapes`},
		{"escaping destination after cleaning", []v1alpha2.BundleSource{src("a", "a/../../up")}, nil,
			v1alpha2.ReasonUnpackFailed, `path "a/../../up" escapes`},
		{"bare ..", []v1alpha2.BundleSource{src("a", "..")}, nil,
			v1alpha2.ReasonUnpackFailed, `path ".." escapes`},
		{"symlink from a source", []v1alpha2.BundleSource{src("link", "")}, nil,
			v1alpha2.ReasonUnpackFailed, "source 0 (http) wrote manifests/link, which is not a regular file"},
		{"unsupported type", []v1alpha2.BundleSource{src("a", ""), {Type: v1alpha2.SourceTypeGit}}, nil,
			v1alpha2.ReasonUnsupportedSource, `source 1 (git): source type "git" is not supported`},
		{"source error is wrapped", []v1alpha2.BundleSource{src("a", ""), src("error:boom", "")}, nil,
			"", "source 1 (http): boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "out")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			err := reg.Unpack(context.Background(), tt.srcs, dir)
			if entries, _ := os.ReadDir(parent); len(entries) != 1 {
				t.Errorf("temporary directories left next to dir: %v", entries)
			}
			if tt.wantMsg != "" {
				if err == nil {
					t.Fatalf("Unpack succeeded, want error %q", tt.wantMsg)
				}
				if !strings.Contains(err.Error(), tt.wantMsg) {
					t.Fatalf("error %q does not contain %q", err, tt.wantMsg)
				}
				if got := failure.Reason(err, ""); got != tt.wantReason {
					t.Fatalf("reason = %q, want %q (error %v)", got, tt.wantReason, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Unpack: %v", err)
			}
			got := readTree(t, dir)
			if !maps.Equal(got, tt.want) {
				t.Fatalf("tree = %v, want %v", sorted(got), sorted(tt.want))
			}
		})
	}
}

func TestRegistryUnpackKeepsExecutableBit(t *testing.T) {
	dir := t.TempDir()
	reg := Registry{v1alpha2.SourceTypeHTTP: fakeSource{"s": {"bin/run.sh": "echo", "f": "x"}}}
	if err := reg.Unpack(context.Background(), []v1alpha2.BundleSource{src("s", "d")}, dir); err != nil {
		t.Fatal(err)
	}
	for name, exec := range map[string]bool{"d/bin/run.sh": true, "d/f": false} {
		info, err := os.Stat(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Mode().Perm()&0o111 != 0; got != exec {
			t.Errorf("%s executable = %v, want %v", name, got, exec)
		}
	}
}

func TestRegistryUnpackCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	reg := Registry{v1alpha2.SourceTypeHTTP: fakeSource{"a": {"f": "x"}}}
	err := reg.Unpack(ctx, []v1alpha2.BundleSource{src("a", "")}, t.TempDir())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
	if failure.As(err) != nil {
		t.Fatal("cancellation must not be a terminal failure")
	}
}

func TestCleanPath(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"", ".", true},
		{".", ".", true},
		{"a", "a", true},
		{"a/b/", "a/b", true},
		{"./a//b", "a/b", true},
		{"a/../b", "b", true},
		{"a/..", ".", true},
		{"..a/b..", "..a/b..", true},
		{"/", "", false},
		{"/a", "", false},
		{"..", "", false},
		{"../a", "", false},
		{"a/../..", "", false},
		{"a/../../b", "", false},
		{"a\x00b", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := CleanPath(tt.in)
			if (err == nil) != tt.ok {
				t.Fatalf("CleanPath(%q) error = %v, want ok %v", tt.in, err, tt.ok)
			}
			if err != nil {
				if r := failure.Reason(err, ""); r != v1alpha2.ReasonUnpackFailed {
					t.Fatalf("reason = %q", r)
				}
				return
			}
			if got != tt.want {
				t.Fatalf("CleanPath(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func sorted(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
