package content

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/source"
	"github.com/rukpak/rukpak/internal/store"
)

// Unpacker unpacks revisions into the store.
type Unpacker struct {
	store   *store.Store
	sources source.Registry

	group   singleflight.Group
	mu      sync.RWMutex
	digests map[string]string // revision (Bundle name) → content digest
}

// NewUnpacker returns an Unpacker writing into st and reading with sources.
func NewUnpacker(st *store.Store, sources source.Registry) *Unpacker {
	return &Unpacker{store: st, sources: sources, digests: map[string]string{}}
}

// Store returns the content store.
func (u *Unpacker) Store() *store.Store { return u.store }

// Ensure returns the digest of the revision's content, unpacking the pinned
// sources into the store unless the content is there already. known is a
// digest recorded earlier (e.g. in the Bundle's status), or "".
func (u *Unpacker) Ensure(ctx context.Context, revision string, pinned []v1alpha2.BundleSource, known string) (string, error) {
	if known != "" && u.store.Has(known) {
		u.remember(revision, known)
		return known, nil
	}
	u.mu.RLock()
	d, ok := u.digests[revision]
	u.mu.RUnlock()
	if ok && u.store.Has(d) {
		return d, nil
	}
	v, err, _ := u.group.Do(revision, func() (any, error) {
		staging, err := u.store.NewStaging()
		if err != nil {
			return "", fmt.Errorf("creating staging directory: %w", err)
		}
		if err := u.sources.Unpack(ctx, pinned, staging); err != nil {
			_ = os.RemoveAll(staging)
			return "", err
		}
		digest, err := u.store.Commit(staging)
		if err != nil {
			_ = os.RemoveAll(staging)
			return "", fmt.Errorf("committing content of %s: %w", revision, err)
		}
		u.remember(revision, digest)
		return digest, nil
	})
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

func (u *Unpacker) remember(revision, digest string) {
	u.mu.Lock()
	u.digests[revision] = digest
	u.mu.Unlock()
}

// Forget drops what is remembered of a revision (its Bundle is gone).
func (u *Unpacker) Forget(revision string) {
	u.mu.Lock()
	delete(u.digests, revision)
	u.mu.Unlock()
}

// listTimeout bounds the listing of Bundles InUse makes.
const listTimeout = 30 * time.Second

// InUse returns the store.InUse of the revisions: the content digest in the
// status of every Bundle (read through r, the manager's cache) and every
// digest u remembers.
func (u *Unpacker) InUse(r client.Reader) store.InUse {
	return func() (map[string]bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
		defer cancel()
		list := &v1alpha2.BundleList{}
		if err := r.List(ctx, list); err != nil {
			return nil, fmt.Errorf("listing Bundles: %w", err)
		}
		inUse := map[string]bool{}
		for i := range list.Items {
			if d := list.Items[i].Status.ContentDigest; d != "" {
				inUse[d] = true
			}
		}
		u.mu.RLock()
		for _, d := range u.digests {
			inUse[d] = true
		}
		u.mu.RUnlock()
		return inUse, nil
	}
}
