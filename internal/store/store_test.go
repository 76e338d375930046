package store

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// node is one entry of a test tree: a directory when dir is set, otherwise a
// regular file with content and mode (0o644 when zero).
type node struct {
	path    string
	content string
	mode    os.FileMode
	dir     bool
}

func writeTree(t *testing.T, root string, nodes []node) {
	t.Helper()
	for _, n := range nodes {
		p := filepath.Join(root, filepath.FromSlash(n.path))
		if n.dir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := n.mode
		if mode == 0 {
			mode = 0o644
		}
		if err := os.WriteFile(p, []byte(n.content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // not subject to the umask
			t.Fatal(err)
		}
	}
}

func newStore(t *testing.T) *Store {
	t.Helper()
	s, err := New(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

// commit writes nodes into a new staging directory and commits it.
func commit(t *testing.T, s *Store, nodes []node) string {
	t.Helper()
	staging, err := s.NewStaging()
	if err != nil {
		t.Fatalf("NewStaging: %v", err)
	}
	writeTree(t, staging, nodes)
	d, err := s.Commit(staging)
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if _, err := os.Stat(staging); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("staging %s still exists after Commit (err %v)", staging, err)
	}
	return d
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(des))
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

func TestCommitRefusesSpecialFiles(t *testing.T) {
	tests := []struct {
		name     string
		make     func(root string) error
		wantPath string
	}{
		{"symlink to a file", func(root string) error {
			if err := os.WriteFile(filepath.Join(root, "target"), []byte("x"), 0o644); err != nil {
				return err
			}
			return os.Symlink("target", filepath.Join(root, "link"))
		}, "link"},
		{"dangling symlink in a directory", func(root string) error {
			if err := os.Mkdir(filepath.Join(root, "d"), 0o755); err != nil {
				return err
			}
			return os.Symlink("/etc/passwd", filepath.Join(root, "d", "link"))
		}, "d/link"},
		{"symlink to a directory", func(root string) error {
			return os.Symlink("/", filepath.Join(root, "root"))
		}, "root"},
		{"named pipe", func(root string) error {
			return syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644)
		}, "fifo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t)
			staging, err := s.NewStaging()
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.make(staging); err != nil {
				t.Fatal(err)
			}
			d, err := s.Commit(staging)
			if err == nil {
				t.Fatalf("Commit = %s, want an error", d)
			}
			if !strings.Contains(err.Error(), tt.wantPath) {
				t.Fatalf("error %q does not name %s", err, tt.wantPath)
			}
			if _, err := os.Stat(staging); err != nil {
				t.Fatalf("staging must be left to the caller: %v", err)
			}
			if got := entries(t, filepath.Join(s.Dir(), "sha256")); len(got) != 0 {
				t.Fatalf("store holds %v after a refused Commit", got)
			}
		})
	}
}

func TestCommitRefusesForeignDirectories(t *testing.T) {
	s := newStore(t)
	staging, err := s.NewStaging()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		dir  string
	}{
		{"outside the store", t.TempDir()},
		{"the staging root", filepath.Join(s.Dir(), "staging")},
		{"below a staging directory", filepath.Join(staging, "sub")},
		{"escaping with ..", filepath.Join(s.Dir(), "staging", "..", "..")},
		{"missing staging directory", filepath.Join(s.Dir(), "staging", "nope")},
	}
	if err := os.Mkdir(filepath.Join(staging, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d, err := s.Commit(tt.dir); err == nil {
				t.Fatalf("Commit(%s) = %s, want an error", tt.dir, d)
			}
		})
	}
}

func TestConcurrentCommits(t *testing.T) {
	s := newStore(t)
	tree := []node{{path: "manifests/cm.yaml", content: "kind: ConfigMap"}, {path: "bin/run", content: "#!/bin/sh", mode: 0o755}}
	const n = 16
	stagings := make([]string, n)
	for i := range stagings {
		st, err := s.NewStaging()
		if err != nil {
			t.Fatal(err)
		}
		writeTree(t, st, tree)
		stagings[i] = st
	}
	digests := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range stagings {
		wg.Go(func() { digests[i], errs[i] = s.Commit(stagings[i]) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Commit %d: %v", i, errs[i])
		}
		if digests[i] != digests[0] {
			t.Fatalf("Commit %d = %s, want %s", i, digests[i], digests[0])
		}
	}
	if got := entries(t, filepath.Join(s.Dir(), "sha256")); len(got) != 1 {
		t.Fatalf("store holds %v, want one tree", got)
	}
	if got := entries(t, filepath.Join(s.Dir(), "staging")); len(got) != 0 {
		t.Fatalf("staging directories left: %v", got)
	}
	fsys, err := s.FS(digests[0])
	if err != nil {
		t.Fatal(err)
	}
	if b, err := fs.ReadFile(fsys, "manifests/cm.yaml"); err != nil || string(b) != "kind: ConfigMap" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
}

func TestFS(t *testing.T) {
	s := newStore(t)
	d := commit(t, s, []node{
		{path: "manifests/a.yaml", content: "a: 1"},
		{path: "manifests/nested/b.yaml", content: "b: 2"},
		{path: "run.sh", content: "echo", mode: 0o755},
		{path: "empty", dir: true},
	})
	fsys, err := s.FS(d)
	if err != nil {
		t.Fatalf("FS: %v", err)
	}
	var walked []string
	err = fs.WalkDir(fsys, ".", func(p string, _ fs.DirEntry, err error) error {
		walked = append(walked, p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := ". empty manifests manifests/a.yaml manifests/nested manifests/nested/b.yaml run.sh"
	if got := strings.Join(walked, " "); got != want {
		t.Fatalf("tree = %s, want %s", got, want)
	}
	files := []struct{ path, content string }{{"manifests/a.yaml", "a: 1"}, {"manifests/nested/b.yaml", "b: 2"}, {"run.sh", "echo"}}
	for _, f := range files {
		if b, err := fs.ReadFile(fsys, f.path); err != nil || string(b) != f.content {
			t.Fatalf("ReadFile(%s) = %q, %v; want %q", f.path, b, err, f.content)
		}
	}
	if info, err := fs.Stat(fsys, "run.sh"); err != nil || info.Mode().Perm()&0o111 == 0 {
		t.Fatalf("run.sh lost its executable bit: %v, %v", info, err)
	}
	if _, err := fsys.Open("../../etc/passwd"); err == nil {
		t.Fatal("FS opened a path outside the tree")
	}
	missing := "sha256:" + strings.Repeat("0", 64)
	if _, err := s.FS(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("FS(missing) error = %v, want fs.ErrNotExist", err)
	}
}

func TestDelete(t *testing.T) {
	s := newStore(t)
	keep := commit(t, s, []node{{path: "keep", content: "1"}})
	gone := commit(t, s, []node{{path: "dir/gone", content: "2"}})
	if err := s.Delete(gone); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if s.Has(gone) {
		t.Fatal("Has after Delete")
	}
	if _, err := s.FS(gone); err == nil {
		t.Fatal("FS after Delete succeeded")
	}
	if err := s.Delete(gone); err != nil {
		t.Fatalf("Delete of a missing digest: %v", err)
	}
	if !s.Has(keep) {
		t.Fatal("Delete removed another tree")
	}
	if got := entries(t, filepath.Join(s.Dir(), "staging")); len(got) != 0 {
		t.Fatalf("Delete left %v in staging", got)
	}
	// Deleted content can be committed again.
	if d := commit(t, s, []node{{path: "dir/gone", content: "2"}}); d != gone || !s.Has(d) {
		t.Fatalf("recommit = %s (has %v), want %s", d, s.Has(d), gone)
	}
}

func TestBadDigests(t *testing.T) {
	s := newStore(t)
	hex := strings.Repeat("ab", 32)
	// A tree at a path a bad digest might resolve to must stay untouched.
	victim := filepath.Join(s.Dir(), "victim")
	if err := os.Mkdir(victim, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []string{
		"",
		"sha256:",
		hex,
		"sha256:" + strings.ToUpper(hex),
		"sha256:" + hex[:63],
		"sha256:" + hex + "0",
		"sha512:" + hex,
		"SHA256:" + hex,
		"sha256:" + hex + "\n",
		" sha256:" + hex,
		"sha256:../victim",
		"sha256:" + hex + "/..",
		"sha256:../../" + hex[6:],
		"../victim",
	}
	for _, d := range tests {
		t.Run(d, func(t *testing.T) {
			if ValidDigest(d) {
				t.Fatal("ValidDigest = true")
			}
			if s.Has(d) {
				t.Fatal("Has = true")
			}
			if _, err := s.FS(d); err == nil || !strings.Contains(err.Error(), "invalid") {
				t.Fatalf("FS error = %v, want invalid digest", err)
			}
			if err := s.Delete(d); err == nil || !strings.Contains(err.Error(), "invalid") {
				t.Fatalf("Delete error = %v, want invalid digest", err)
			}
			if _, err := os.Stat(victim); err != nil {
				t.Fatalf("victim directory: %v", err)
			}
		})
	}
}

func TestNew(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	s, err := New(dir)
	if err != nil {
		t.Fatalf("New on a missing directory: %v", err)
	}
	d := commit(t, s, []node{{path: "f", content: "x"}})
	leftover, err := s.NewStaging()
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, leftover, []node{{path: "half/written", content: "y"}})

	s2, err := New(dir)
	if err != nil {
		t.Fatalf("reopening: %v", err)
	}
	if got := entries(t, filepath.Join(dir, "staging")); len(got) != 0 {
		t.Fatalf("leftover staging directories: %v", got)
	}
	if !s2.Has(d) {
		t.Fatal("reopened store lost committed content")
	}
	if _, err := New(filepath.Join(dir, "sha256", d[len("sha256:"):], "f")); err == nil {
		t.Fatal("New below a regular file succeeded")
	}
}

func TestNewStaging(t *testing.T) {
	s := newStore(t)
	seen := map[string]bool{}
	for range 5 {
		d, err := s.NewStaging()
		if err != nil {
			t.Fatal(err)
		}
		if seen[d] {
			t.Fatalf("NewStaging returned %s twice", d)
		}
		seen[d] = true
		if filepath.Dir(d) != filepath.Join(s.Dir(), "staging") {
			t.Fatalf("staging %s is not in the store", d)
		}
		if got := entries(t, d); len(got) != 0 {
			t.Fatalf("staging %s is not empty: %v", d, got)
		}
	}
}
