package git

import (
	"sort"
	"strings"
	"testing"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
)

// file is one entry of a commit built by testRepo: content (the target of
// a symlink, the commit hash of a submodule) and mode (Regular if zero).
type file struct {
	content string
	mode    filemode.FileMode
}

// testRepo is a bare repository in memory, built object by object.
type testRepo struct {
	t    *testing.T
	sto  *memory.Storage
	repo *gogit.Repository
	when time.Time
}

func newTestRepo(t *testing.T) *testRepo {
	t.Helper()
	sto := memory.NewStorage()
	r, err := gogit.Init(sto, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &testRepo{t: t, sto: sto, repo: r, when: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// commit stores a commit of files (slash path → content) with parents.
func (r *testRepo) commit(msg string, files map[string]file, parents ...plumbing.Hash) plumbing.Hash {
	r.t.Helper()
	r.when = r.when.Add(time.Minute)
	sig := object.Signature{Name: "test", Email: "test@example.com", When: r.when}
	c := &object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: r.tree(files), ParentHashes: parents}
	return r.store(c)
}

// tree stores the tree of files and returns its hash.
func (r *testRepo) tree(files map[string]file) plumbing.Hash {
	r.t.Helper()
	subs := map[string]map[string]file{}
	t := &object.Tree{}
	for p, f := range files {
		if dir, rest, ok := strings.Cut(p, "/"); ok {
			if subs[dir] == nil {
				subs[dir] = map[string]file{}
			}
			subs[dir][rest] = f
			continue
		}
		t.Entries = append(t.Entries, r.entry(p, f))
	}
	for dir, sub := range subs {
		t.Entries = append(t.Entries, object.TreeEntry{Name: dir, Mode: filemode.Dir, Hash: r.tree(sub)})
	}
	sortEntries(t.Entries)
	return r.store(t)
}

// entry stores the blob of f (unless it is a submodule) and returns its
// tree entry.
func (r *testRepo) entry(name string, f file) object.TreeEntry {
	mode := f.mode
	if mode == 0 {
		mode = filemode.Regular
	}
	if mode == filemode.Submodule {
		return object.TreeEntry{Name: name, Mode: mode, Hash: plumbing.NewHash(f.content)}
	}
	obj := r.sto.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	w, err := obj.Writer()
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := w.Write([]byte(f.content)); err != nil {
		r.t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		r.t.Fatal(err)
	}
	h, err := r.sto.SetEncodedObject(obj)
	if err != nil {
		r.t.Fatal(err)
	}
	return object.TreeEntry{Name: name, Mode: mode, Hash: h}
}

// sortEntries sorts tree entries as git does: a directory sorts as if its
// name ended with a slash.
func sortEntries(es []object.TreeEntry) {
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(es, func(i, j int) bool { return key(es[i]) < key(es[j]) })
}

// store encodes and stores a tree or commit.
func (r *testRepo) store(o interface {
	Encode(plumbing.EncodedObject) error
}) plumbing.Hash {
	r.t.Helper()
	obj := r.sto.NewEncodedObject()
	if err := o.Encode(obj); err != nil {
		r.t.Fatal(err)
	}
	h, err := r.sto.SetEncodedObject(obj)
	if err != nil {
		r.t.Fatal(err)
	}
	return h
}

// branch points the branch name at h (and HEAD at the branch, for main).
func (r *testRepo) branch(name string, h plumbing.Hash) {
	r.t.Helper()
	ref := plumbing.NewBranchReferenceName(name)
	if err := r.sto.SetReference(plumbing.NewHashReference(ref, h)); err != nil {
		r.t.Fatal(err)
	}
	if name == "main" {
		if err := r.sto.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, ref)); err != nil {
			r.t.Fatal(err)
		}
	}
}

// lightweightTag points the tag name at h.
func (r *testRepo) lightweightTag(name string, h plumbing.Hash) {
	r.t.Helper()
	if err := r.sto.SetReference(plumbing.NewHashReference(plumbing.NewTagReferenceName(name), h)); err != nil {
		r.t.Fatal(err)
	}
}

// annotatedTag creates a tag object for h and points the tag name at it.
func (r *testRepo) annotatedTag(name string, h plumbing.Hash) plumbing.Hash {
	r.t.Helper()
	ref, err := r.repo.CreateTag(name, h, &gogit.CreateTagOptions{
		Tagger:  &object.Signature{Name: "test", Email: "test@example.com", When: r.when},
		Message: "release " + name,
	})
	if err != nil {
		r.t.Fatal(err)
	}
	return ref.Hash()
}
