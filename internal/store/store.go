package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

const (
	committedDir = Algorithm // <dir>/sha256/<hex>
	stagingDir   = "staging" // <dir>/staging/<rand>
	dirMode      = 0o755
)

// Store is a content-addressed store of directory trees on local disk. It is
// safe for concurrent use by several goroutines of one process.
type Store struct {
	root        string
	staging     string
	quota       int64
	tenantQuota int64

	// extra returns what else counts against a tenant's quota (its kept
	// renders, in the cluster); nil for nothing.
	extra func(tenant string) int64

	mu    sync.Mutex // guards what follows, and commits and deletes
	inUse InUse
	trees map[string]*tree // digest → size and last use
	used  int64            // bytes of all trees
}

// New opens the store in dir, creating dir if it is missing and removing
// staging directories left over by an earlier process.
func New(dir string, opts ...Option) (*Store, error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("resolving store directory %s: %w", dir, err)
	}
	s := &Store{root: root, staging: filepath.Join(root, stagingDir), trees: map[string]*tree{}}
	for _, o := range opts {
		o(s)
	}
	if err := os.RemoveAll(s.staging); err != nil {
		return nil, fmt.Errorf("removing leftover staging directories: %w", err)
	}
	for _, d := range []string{filepath.Join(root, committedDir), s.staging} {
		if err := os.MkdirAll(d, dirMode); err != nil {
			return nil, fmt.Errorf("creating %s: %w", d, err)
		}
	}
	if err := s.load(); err != nil {
		return nil, fmt.Errorf("reading the content store: %w", err)
	}
	return s, nil
}

// ScratchDir returns the directory for temporary files of the store's
// users (such as sources' temporary repositories); New empties it.
func (s *Store) ScratchDir() string { return s.staging }

// Dir returns the directory of the store.
func (s *Store) Dir() string { return s.root }

// NewStaging returns a fresh, empty directory inside the store for the
// caller to write a tree into and then Commit. A staging directory that is
// not committed should be removed by the caller; New removes any left over.
func (s *Store) NewStaging() (string, error) {
	d, err := os.MkdirTemp(s.staging, "s-")
	if err != nil {
		return "", fmt.Errorf("creating staging directory: %w", err)
	}
	return d, nil
}

// Commit is CommitFor without a tenant: only the quota of the whole
// store applies.
func (s *Store) Commit(staging string) (string, error) { return s.CommitFor(staging, "") }

// CommitFor hashes the tree in staging (see TreeDigest), moves it to its
// content address and returns its digest ("sha256:<hex>"). If the store
// already holds that digest, staging is removed and the digest returned, so
// committing the same content twice, even concurrently, is fine.
//
// A new tree must fit in tenant's quota (WithTenantQuota) beside the trees
// the tenant's revisions reference, and then in the store's quota (see
// WithQuota); tenant "" has no quota of its own.
//
// staging must be a directory returned by NewStaging. The tree must hold
// only regular files and directories; anything else is refused with an
// error naming its path, and staging is left in place for the caller.
func (s *Store) CommitFor(staging, tenant string) (string, error) {
	staging, err := s.checkStaging(staging)
	if err != nil {
		return "", err
	}
	digest, err := TreeDigest(staging)
	if err != nil {
		return "", fmt.Errorf("hashing %s: %w", staging, err)
	}
	size, err := treeSize(staging)
	if err != nil {
		return "", fmt.Errorf("measuring %s: %w", staging, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	target := s.path(digest)
	if s.has(digest) {
		if t, ok := s.trees[digest]; ok {
			t.lastUsed = time.Now()
		}
		return digest, s.discard(staging)
	}
	if err := s.fitsTenant(tenant, size); err != nil {
		return "", err
	}
	if err := s.makeRoom(size); err != nil {
		return "", err
	}
	if err := os.Chmod(staging, dirMode); err != nil { // MkdirTemp made it 0700
		return "", fmt.Errorf("setting mode of %s: %w", staging, err)
	}
	if err := os.Rename(staging, target); err != nil {
		return "", fmt.Errorf("moving tree to %s: %w", digest, err)
	}
	s.trees[digest] = &tree{size: size, lastUsed: time.Now()}
	s.used += size
	return digest, nil
}

// checkStaging returns the cleaned staging path after making sure it is a
// directory directly inside the store's staging directory.
func (s *Store) checkStaging(staging string) (string, error) {
	abs, err := filepath.Abs(staging)
	if err != nil {
		return "", fmt.Errorf("resolving staging directory %s: %w", staging, err)
	}
	if filepath.Dir(abs) != s.staging {
		return "", fmt.Errorf("%s is not a staging directory of the store in %s", staging, s.root)
	}
	info, err := os.Lstat(abs)
	if err != nil {
		return "", fmt.Errorf("stat staging directory: %w", err)
	}
	if !info.IsDir() {
		return "", fmt.Errorf("staging %s is not a directory", staging)
	}
	return abs, nil
}

func (s *Store) discard(staging string) error {
	if err := os.RemoveAll(staging); err != nil {
		return fmt.Errorf("removing staging directory %s: %w", staging, err)
	}
	return nil
}

// path returns where the tree of a valid digest lives.
func (s *Store) path(digest string) string {
	return filepath.Join(s.root, committedDir, strings.TrimPrefix(digest, Algorithm+":"))
}

// Has reports whether the store holds the tree of digest. An invalid digest
// is never held.
func (s *Store) Has(digest string) bool {
	ok := s.has(digest)
	if ok {
		s.touch(digest)
	}
	return ok
}

// has is Has without recording a use.
func (s *Store) has(digest string) bool {
	if !ValidDigest(digest) {
		return false
	}
	info, err := os.Lstat(s.path(digest))
	return err == nil && info.IsDir()
}

// FS returns a read-only view of the tree of digest. It fails for an invalid
// digest and for one the store does not hold.
func (s *Store) FS(digest string) (fs.FS, error) {
	if !ValidDigest(digest) {
		return nil, fmt.Errorf("invalid content digest %q", digest)
	}
	if !s.Has(digest) {
		return nil, fmt.Errorf("content %s: %w", digest, fs.ErrNotExist)
	}
	return os.DirFS(s.path(digest)), nil
}

// Delete removes the tree of digest. Deleting a digest the store does not
// hold is not an error. The tree first leaves its address in one rename, so
// nobody sees a half-deleted tree under it.
func (s *Store) Delete(digest string) error {
	if !ValidDigest(digest) {
		return fmt.Errorf("invalid content digest %q", digest)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.remove(digest)
}

// remove deletes the tree of a valid digest; s.mu is held.
func (s *Store) remove(digest string) error {
	if t, ok := s.trees[digest]; ok {
		s.used -= t.size
		delete(s.trees, digest)
	}
	trash, err := os.MkdirTemp(s.staging, "d-")
	if err != nil {
		return fmt.Errorf("creating trash directory: %w", err)
	}
	defer func() { _ = os.RemoveAll(trash) }() // best effort; New cleans up too
	if err := os.Rename(s.path(digest), filepath.Join(trash, "tree")); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("deleting content %s: %w", digest, err)
	}
	if err := os.RemoveAll(trash); err != nil {
		return fmt.Errorf("deleting content %s: %w", digest, err)
	}
	return nil
}
