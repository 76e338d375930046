package store

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// Option configures a Store.
type Option func(*Store)

// WithQuota bounds the bytes of the files of all committed trees; n <= 0
// means no quota.
func WithQuota(n int64) Option { return func(s *Store) { s.quota = n } }

// WithTenantQuota bounds the bytes of the trees one tenant's revisions
// reference (see CommitFor); n <= 0 means no bound but the quota.
func WithTenantQuota(n int64) Option { return func(s *Store) { s.tenantQuota = n } }

// WithTenantExtra counts what fn returns for a tenant against its quota
// besides its trees: the renders the manager keeps for it in the cluster
// (renderstore.Store.TenantBytes). fn must not block.
func WithTenantExtra(fn func(tenant string) int64) Option {
	return func(s *Store) { s.extra = fn }
}

// Holder is a revision that references a tree: the store never evicts
// such a tree, and counts it against the quota of the holder's tenant.
type Holder struct {
	// Tenant is whose revision it is (package tenant).
	Tenant string
	// Bundle is the revision's Bundle.
	Bundle string
	// BundleDeployment controls the Bundle; "" when none does.
	BundleDeployment string
}

// InUse returns, by digest, the revisions that still reference content;
// the store never evicts it to make room. A digest with no holders listed
// is referenced all the same.
type InUse func() (map[string][]Holder, error)

// SetInUse tells the store which content is referenced. Until it is set,
// every tree is taken as referenced, so that nothing is evicted.
func (s *Store) SetInUse(fn InUse) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inUse = fn
}

// TenantQuota returns the bound of one tenant's trees (0: none).
func (s *Store) TenantQuota() int64 { return s.tenantQuota }

// Usage returns the bytes the committed trees hold and the quota (0: none).
func (s *Store) Usage() (used, quota int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used, s.quota
}

// tree is what the store knows of one committed tree.
type tree struct {
	size     int64
	lastUsed time.Time
}

// load reads the size of every committed tree (when it was last used is
// when it was committed, as far as a new process knows).
func (s *Store) load() error {
	dir := filepath.Join(s.root, committedDir)
	des, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("reading %s: %w", dir, err)
	}
	for _, de := range des {
		digest := Algorithm + ":" + de.Name()
		if !ValidDigest(digest) || !de.IsDir() {
			continue
		}
		size, err := treeSize(filepath.Join(dir, de.Name()))
		if err != nil {
			return err
		}
		t := &tree{size: size}
		if fi, err := de.Info(); err == nil {
			t.lastUsed = fi.ModTime()
		}
		s.trees[digest] = t
		s.used += size
	}
	return nil
}

// treeSize returns the bytes of the regular files under root.
func treeSize(root string) (int64, error) {
	entries, err := scan(root)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, e := range entries {
		n += e.size
	}
	return n, nil
}

// touch records that digest was used now.
func (s *Store) touch(digest string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.trees[digest]; ok {
		t.lastUsed = time.Now()
	}
}

// holders returns what references each tree; without SetInUse, every
// tree, by nobody known. s.mu is held.
func (s *Store) holders() (map[string][]Holder, error) {
	if s.inUse == nil {
		all := make(map[string][]Holder, len(s.trees))
		for d := range s.trees {
			all[d] = nil
		}
		return all, nil
	}
	inUse, err := s.inUse()
	if err != nil {
		return nil, fmt.Errorf("listing the content revisions reference: %w", err)
	}
	return inUse, nil
}

// makeRoom evicts trees no revision references, least recently used
// first, until size more bytes fit in the quota; s.mu is held. Content
// that cannot fit is a terminal ResourceLimit failure naming the quota.
func (s *Store) makeRoom(size int64) error {
	if s.quota <= 0 || s.used+size <= s.quota {
		return nil
	}
	if size > s.quota {
		return failure.New(v1alpha2.ReasonResourceLimit,
			"the content is %d bytes, larger than the content store's quota of %d bytes", size, s.quota)
	}
	inUse, err := s.holders()
	if err != nil {
		return err
	}
	var victims []string
	for d := range s.trees {
		if _, ok := inUse[d]; !ok {
			victims = append(victims, d)
		}
	}
	var freeable int64
	for _, d := range victims {
		freeable += s.trees[d].size
	}
	if s.used-freeable+size > s.quota {
		// Evicting would not help: keep what is there.
		return failure.New(v1alpha2.ReasonResourceLimit,
			"the content store's quota of %d bytes is full: %d bytes are content that Bundles still reference, and the new content needs %d bytes more",
			s.quota, s.used-freeable, size)
	}
	sort.Slice(victims, func(i, j int) bool {
		a, b := s.trees[victims[i]], s.trees[victims[j]]
		return a.lastUsed.Before(b.lastUsed) || (a.lastUsed.Equal(b.lastUsed) && victims[i] < victims[j])
	})
	for _, d := range victims {
		if s.used+size <= s.quota {
			break
		}
		if err := s.remove(d); err != nil {
			return err
		}
	}
	return nil
}
