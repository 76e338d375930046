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
	"github.com/rukpak/rukpak/internal/tenant"
)

// Unpacker unpacks revisions into the store.
type Unpacker struct {
	store   *store.Store
	sources source.Registry
	fetches *tenant.Slots

	group   singleflight.Group
	mu      sync.RWMutex
	digests map[string]unpacked // by revision (Bundle name)

	// key names pinned sources with their credentials (WithSharing); nil
	// when unpacks are not shared.
	key func(ctx context.Context, pinned []v1alpha2.BundleSource) (string, error)
	// pins collapses concurrent unpacks of one key into one fetch.
	pins singleflight.Group
	// shared are the digests unpacked by key, at most maxShared.
	shared map[string]string
}

// maxShared bounds the unpacks remembered by key: past it, one is
// forgotten for each new one (it is fetched again when asked for).
const maxShared = 4096

// Option configures an Unpacker.
type Option func(*Unpacker)

// WithSharing makes revisions whose pinned sources have the same key (the
// same sources, pins and credentials: sourcekey.Of) share one unpack: a
// thousand BundleDeployments that follow one chart fetch each new
// version once, not a thousand times. The content is that of the pins
// (a source verifies what it fetches against them) and was fetched with
// the same credentials, so it is what each would have fetched; every
// revision that uses it still counts it against its own tenant's quota.
func WithSharing(key func(ctx context.Context, pinned []v1alpha2.BundleSource) (string, error)) Option {
	return func(u *Unpacker) { u.key = key }
}

// unpacked is what Ensure remembers of a revision.
type unpacked struct {
	digest, tenant string
}

// Default bounds of the fetches in flight (see WithFetches).
const (
	// DefaultFetches is how many revisions are unpacked at once in all.
	DefaultFetches = 8
	// DefaultTenantFetches is how many of those one tenant's may be.
	DefaultTenantFetches = 2
)

// NewUnpacker returns an Unpacker writing into st and reading with
// sources, unpacking at most fetches revisions at once and tenantFetches
// of one tenant (0: DefaultFetches, DefaultTenantFetches).
func NewUnpacker(st *store.Store, sources source.Registry, fetches, tenantFetches int, opts ...Option) *Unpacker {
	if fetches <= 0 {
		fetches = DefaultFetches
	}
	if tenantFetches <= 0 {
		tenantFetches = min(DefaultTenantFetches, fetches)
	}
	u := &Unpacker{store: st, sources: sources, fetches: tenant.NewSlots(fetches, tenantFetches),
		digests: map[string]unpacked{}, shared: map[string]string{}}
	for _, o := range opts {
		o(u)
	}
	return u
}

// Store returns the content store.
func (u *Unpacker) Store() *store.Store { return u.store }

// Ensure returns the digest of the revision's content, unpacking the pinned
// sources into the store unless the content is there already. known is a
// digest recorded earlier (e.g. in the Bundle's status), or "".
//
// The revision is the tenant's that ctx carries (package tenant): a
// tenant whose content fills its quota of the store is refused before
// anything is fetched; the fetch waits for one of the tenant's slots and
// one of all; the content must fit in the tenant's quota to be committed.
func (u *Unpacker) Ensure(ctx context.Context, revision string, pinned []v1alpha2.BundleSource, known string) (string, error) {
	t := tenant.From(ctx)
	if known != "" && u.store.Has(known) {
		u.remember(revision, known, t)
		return known, nil
	}
	u.mu.RLock()
	r, ok := u.digests[revision]
	u.mu.RUnlock()
	if ok && u.store.Has(r.digest) {
		return r.digest, nil
	}
	v, err, _ := u.group.Do(revision, func() (any, error) {
		if err := u.store.CheckTenant(t); err != nil {
			return "", fmt.Errorf("unpacking %s: %w", revision, err)
		}
		digest, err := u.sharedFetch(ctx, revision, pinned, t)
		if err != nil {
			return "", err
		}
		u.remember(revision, digest, t)
		return digest, nil
	})
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

// sharedFetch returns the digest of an unpack of pinned made for another
// revision with the same key (WithSharing), or unpacks it for this one;
// concurrent unpacks of one key make one fetch.
func (u *Unpacker) sharedFetch(ctx context.Context, revision string, pinned []v1alpha2.BundleSource, t string) (string, error) {
	if u.key == nil {
		return u.fetch(ctx, revision, pinned, t)
	}
	key, err := u.key(ctx, pinned)
	if err != nil {
		// A credential that cannot be read: the source says why.
		return u.fetch(ctx, revision, pinned, t)
	}
	ch := u.pins.DoChan(key, func() (any, error) {
		if d, ok := u.sharedDigest(key); ok {
			return d, nil
		}
		d, err := u.fetch(ctx, revision, pinned, t)
		if err == nil {
			u.share(key, d)
		}
		return d, err
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return "", r.Err
		}
		return r.Val.(string), nil
	case <-ctx.Done():
		return "", fmt.Errorf("unpacking %s: waiting for an unpack of the same sources: %w", revision, ctx.Err())
	}
}

// fetch unpacks pinned into the store for revision, within the fetch
// slots of tenant t and of all.
func (u *Unpacker) fetch(ctx context.Context, revision string, pinned []v1alpha2.BundleSource, t string) (string, error) {
	release, err := u.fetches.Acquire(ctx, "unpacking "+revision)
	if err != nil {
		return "", err
	}
	defer release()
	staging, err := u.store.NewStaging()
	if err != nil {
		return "", fmt.Errorf("creating staging directory: %w", err)
	}
	if err := u.sources.Unpack(ctx, pinned, staging); err != nil {
		_ = os.RemoveAll(staging)
		return "", err
	}
	digest, err := u.store.CommitFor(staging, t)
	if err != nil {
		_ = os.RemoveAll(staging)
		return "", fmt.Errorf("committing content of %s: %w", revision, err)
	}
	return digest, nil
}

// sharedDigest returns the digest unpacked for key, when the store still
// holds it. The store is asked without u.mu held: the store's own lock,
// held while it makes room, waits for u.mu (InUse).
func (u *Unpacker) sharedDigest(key string) (string, bool) {
	u.mu.RLock()
	d, ok := u.shared[key]
	u.mu.RUnlock()
	if !ok {
		return "", false
	}
	if !u.store.Has(d) {
		u.mu.Lock()
		if u.shared[key] == d {
			delete(u.shared, key)
		}
		u.mu.Unlock()
		return "", false
	}
	return d, true
}

// share remembers that key unpacked to digest.
func (u *Unpacker) share(key, digest string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, ok := u.shared[key]; !ok && len(u.shared) >= maxShared {
		for k := range u.shared {
			delete(u.shared, k)
			break
		}
	}
	u.shared[key] = digest
}

func (u *Unpacker) remember(revision, digest, t string) {
	u.mu.Lock()
	u.digests[revision] = unpacked{digest: digest, tenant: t}
	u.mu.Unlock()
}

// Fetches returns how many unpacks are in flight and the most there were
// at once, in all and by tenant.
func (u *Unpacker) Fetches() tenant.Usage { return u.fetches.Usage() }

// Forget drops what is remembered of a revision (its Bundle is gone).
func (u *Unpacker) Forget(revision string) {
	u.mu.Lock()
	delete(u.digests, revision)
	u.mu.Unlock()
}

// ForgetRevisions drops what is remembered of the revisions whose names
// match: a revision is unpacked before its Bundle is created, so a
// BundleDeployment deleted in between leaves revisions no Bundle's
// deletion forgets.
func (u *Unpacker) ForgetRevisions(match func(revision string) bool) {
	u.mu.Lock()
	for rev := range u.digests {
		if match(rev) {
			delete(u.digests, rev)
		}
	}
	u.mu.Unlock()
}

// listTimeout bounds the listing of Bundles InUse makes.
const listTimeout = 30 * time.Second

// InUse returns the store.InUse of the revisions: the content digest of
// every Bundle (recorded in its spec or reported in its status) (read through r, the manager's cache), held by
// the Bundle's owner (tenant.OfBundle), and every digest u remembers, held
// by the tenant it was unpacked for.
func (u *Unpacker) InUse(r client.Reader) store.InUse {
	return func() (map[string][]store.Holder, error) {
		ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
		defer cancel()
		list := &v1alpha2.BundleList{}
		if err := r.List(ctx, list); err != nil {
			return nil, fmt.Errorf("listing Bundles: %w", err)
		}
		inUse := map[string][]store.Holder{}
		listed := map[string]bool{}
		for i := range list.Items {
			b := &list.Items[i]
			d := b.ContentDigest()
			if d == "" {
				continue
			}
			owner, err := tenant.OfBundle(ctx, r, b)
			if err != nil {
				return nil, err
			}
			inUse[d] = append(inUse[d], store.Holder{Tenant: owner.Tenant, Bundle: b.Name, BundleDeployment: owner.BundleDeployment})
			listed[b.Name+" "+d] = true
		}
		u.mu.RLock()
		for rev, un := range u.digests {
			if !listed[rev+" "+un.digest] {
				inUse[un.digest] = append(inUse[un.digest], store.Holder{Tenant: un.tenant, Bundle: rev})
			}
		}
		u.mu.RUnlock()
		return inUse, nil
	}
}
