package git

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// TestWriterRefusesHostileTrees writes trees no git client would make
// (they can only come from a hostile server or a crafted repository).
func TestWriterRefusesHostileTrees(t *testing.T) {
	tests := []struct {
		name    string
		entries func(r *testRepo, blob object.TreeEntry) []object.TreeEntry
		wantMsg string
	}{
		{name: "dot-dot entry",
			entries: func(_ *testRepo, b object.TreeEntry) []object.TreeEntry { b.Name = ".."; return []object.TreeEntry{b} },
			wantMsg: `has an entry named ".."`},
		{name: "entry with a slash",
			entries: func(_ *testRepo, b object.TreeEntry) []object.TreeEntry {
				b.Name = "../../escaped"
				return []object.TreeEntry{b}
			},
			wantMsg: `has an entry named "../../escaped"`},
		{name: "dot-dot directory",
			entries: func(r *testRepo, b object.TreeEntry) []object.TreeEntry {
				sub := r.store(&object.Tree{Entries: []object.TreeEntry{b}})
				return []object.TreeEntry{{Name: "..", Mode: filemode.Dir, Hash: sub}}
			},
			wantMsg: `has an entry named ".."`},
		{name: "entry listed twice",
			entries: func(_ *testRepo, b object.TreeEntry) []object.TreeEntry { return []object.TreeEntry{b, b} },
			wantMsg: "the tree lists f twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestRepo(t)
			blob := r.entry("f", file{content: "x"})
			tree := r.store(&object.Tree{Entries: tt.entries(r, blob)})
			sig := object.Signature{Name: "t", Email: "t@example.com"}
			h := r.store(&object.Commit{Author: sig, Committer: sig, TreeHash: tree})
			c, err := object.GetCommit(r.sto, h)
			if err != nil {
				t.Fatal(err)
			}
			parent := t.TempDir()
			dir := filepath.Join(parent, "out")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			w := &writer{sto: r.sto, root: dir, repo: "repo", maxBytes: DefaultMaxBytes, maxFiles: DefaultMaxFiles}
			err = w.writeCommit(context.Background(), c, ".")
			checkFailure(t, "write", err, v1alpha2.ReasonUnpackFailed, tt.wantMsg)
			entries, err := os.ReadDir(parent)
			if err != nil || len(entries) != 1 {
				t.Fatalf("written next to the directory: %v (%v)", entries, err)
			}
		})
	}
}

func TestFloating(t *testing.T) {
	const h = "0123456789012345678901234567890123456789"
	tests := []struct {
		name string
		git  *v1alpha2.GitSource
		want bool
	}{
		{name: "branch", git: &v1alpha2.GitSource{Ref: v1alpha2.GitRef{Branch: "main"}}, want: true},
		{name: "tag", git: &v1alpha2.GitSource{Ref: v1alpha2.GitRef{Tag: "v1"}}, want: true},
		{name: "commit", git: &v1alpha2.GitSource{Ref: v1alpha2.GitRef{Commit: h}}},
		{name: "resolved branch", git: &v1alpha2.GitSource{Ref: v1alpha2.GitRef{Branch: "main"}, ResolvedCommit: h}},
		{name: "semver", git: &v1alpha2.GitSource{Ref: v1alpha2.GitRef{Semver: "1.x"}}, want: true},
		{name: "resolved semver", git: &v1alpha2.GitSource{Ref: v1alpha2.GitRef{Semver: "1.x"}, ResolvedCommit: h, ResolvedTag: "v1.0.0"}},
		{name: "no git member"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := v1alpha2.BundleSource{Type: v1alpha2.SourceTypeGit, Git: tt.git}
			if got := New(nil).Floating(src); got != tt.want {
				t.Fatalf("Floating = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseCommit(t *testing.T) {
	tests := []struct {
		in, wantMsg string
	}{
		{in: "0123456789abcdef0123456789abcdef01234567"},
		{in: "0123456789abcdef", wantMsg: "not a full 40-character hex hash"},
		{in: "0123456789abcdef0123456789abcdef0123456z", wantMsg: "not a full 40-character hex hash"},
		{in: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", wantMsg: "SHA-256 repositories are not supported"},
	}
	for _, tt := range tests {
		h, err := parseCommit(tt.in)
		if tt.wantMsg == "" {
			if err != nil || h != plumbing.NewHash(tt.in) {
				t.Errorf("parseCommit(%q) = %v, %v", tt.in, h, err)
			}
			continue
		}
		checkFailure(t, "parseCommit("+tt.in+")", err, v1alpha2.ReasonUnpackFailed, tt.wantMsg)
	}
}

func TestRedact(t *testing.T) {
	tests := map[string]string{
		"https://example.com/r.git":             "https://example.com/r.git",
		"https://user:secret@example.com/r.git": "https://user:xxxxx@example.com/r.git",
		"ssh://git@example.com/r.git":           "ssh://git@example.com/r.git",
		"git@example.com:org/r.git":             "git@example.com:org/r.git",
	}
	for in, want := range tests {
		if got := redact(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestUnpackRefusesUnpinned(t *testing.T) {
	src := v1alpha2.BundleSource{Type: v1alpha2.SourceTypeGit, Git: &v1alpha2.GitSource{
		Repository: "https://user:secret@example.com/r.git", Ref: v1alpha2.GitRef{Branch: "main"},
	}}
	err := New(nil).Unpack(context.Background(), src, t.TempDir())
	checkFailure(t, "Unpack", err, transient, "git source https://user:xxxxx@example.com/r.git is not pinned to a commit")
}
