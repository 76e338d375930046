package renderstore

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/internal/limits"
)

// The manager writes, reads, lists and deletes its render Secrets in its
// own namespace only.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;create;delete,namespace=rukpak-system

// Options bound a Store. A value of zero or below takes its default.
type Options struct {
	// MaxSize is the most bytes a render may encode to before
	// compression; Load decompresses no more (DefaultMaxSize).
	MaxSize int64
	// MaxChunks is the most chunks a render may have (DefaultMaxChunks, at
	// most 100,000).
	MaxChunks int
	// CacheEntries is the most renders the Store keeps decoded
	// (DefaultCacheEntries).
	CacheEntries int
	// CacheBytes is the most bytes of JSON the renders the Store keeps
	// decoded may have (DefaultCacheBytes).
	CacheBytes int64
	// TenantRenders is the most renders one tenant (the one Save's
	// context carries) may keep at once (DefaultTenantRenders).
	TenantRenders int
	// TenantQuota bounds what one tenant's kept renders (compressed) and
	// its content in the content store (ContentUsage) hold together; 0
	// for no bound.
	TenantQuota int64
	// ContentUsage returns what a tenant's content holds in the content
	// store; nil counts none.
	ContentUsage func(tenant string) (int64, error)
}

// Defaults of the cache's bounds: small, since the manager holds a
// thousand installs in 150 MiB, and decoded objects take a few times their
// JSON.
const (
	// DefaultCacheEntries is the most renders a Store keeps decoded.
	DefaultCacheEntries = 64
	// DefaultCacheBytes is the most bytes of JSON the renders a Store
	// keeps decoded may have together; a render over a quarter of it is
	// not kept.
	DefaultCacheBytes int64 = 8 << 20
)

// withDefaults returns o with its unset values at their defaults.
func (o Options) withDefaults() Options {
	o.MaxSize = limits.PositiveOr(o.MaxSize, DefaultMaxSize)
	o.MaxChunks = min(limits.PositiveOr(o.MaxChunks, DefaultMaxChunks), maxChunksCap)
	o.CacheEntries = limits.PositiveOr(o.CacheEntries, DefaultCacheEntries)
	o.CacheBytes = limits.PositiveOr(o.CacheBytes, DefaultCacheBytes)
	o.TenantRenders = limits.PositiveOr(o.TenantRenders, DefaultTenantRenders)
	return o
}

// Store keeps renders in Secrets of one namespace (see the package doc).
// It is safe for concurrent use; concurrent Saves of different renders of
// one Bundle may leave chunks of both, which Load reports as corrupt.
type Store struct {
	c         client.Client
	r         client.Reader
	namespace string
	opts      Options
	chunkSize int
	cache     *renderCache

	// saveMu makes the bounds check of a tenant and the writes of the
	// render it admits one step.
	saveMu sync.Mutex
	// usage is what each tenant's renders were last seen to hold
	// (TenantBytes).
	usageMu sync.Mutex
	usage   map[string]int64
}

// New returns a Store that writes with c and reads with apiReader in
// namespace. Both act as the manager (not as a BundleDeployment's
// identity), and apiReader must not be a cache (the manager's
// GetAPIReader): chunk Secrets are kept out of the informer cache.
func New(c client.Client, apiReader client.Reader, namespace string, o Options) *Store {
	o = o.withDefaults()
	return &Store{c: c, r: apiReader, namespace: namespace, opts: o, chunkSize: ChunkSize,
		cache: newRenderCache(o.CacheEntries, o.CacheBytes), usage: map[string]int64{}}
}

// Load returns the render stored for the Bundle named bundleName:
// ErrNotFound when there is none, a *CorruptError when it cannot be used.
// A render Load or Save handled recently costs one small read (chunk 0's
// metadata). The caller may change what Load returns.
func (s *Store) Load(ctx context.Context, bundleName string) (*Render, error) {
	h, err := s.head(ctx, bundleName)
	if err != nil {
		return nil, err
	}
	key := cacheKey{bundle: bundleName, sum: h.sum}
	if r, ok := s.cache.get(key); ok {
		return r.clone(), nil
	}
	data, err := s.readPayload(ctx, bundleName, h)
	if err != nil {
		return nil, err
	}
	d, err := s.decode(bundleName, h, data)
	if err != nil {
		return nil, err
	}
	if !s.cache.fits(d.jsonSize) {
		return d.render, nil // nobody else holds it
	}
	s.cache.add(key, d.render, d.jsonSize)
	return d.render.clone(), nil
}

// decode decodes data, the payload of the chunks h describes, which
// must be the render of bundle with the chunks' UID.
func (s *Store) decode(bundle string, h header, data []byte) (*decoded, error) {
	d, err := decode(bundle, data, s.opts.MaxSize)
	if err != nil {
		return nil, err
	}
	if d.render.Revision != bundle || d.render.BundleUID != h.uid {
		return nil, corrupt(bundle, -1, ProblemMismatch, "the payload is the render of bundle %s (uid %s), the chunks say %s (uid %s)",
			d.render.Revision, d.render.BundleUID, bundle, h.uid)
	}
	return d, nil
}

// Delete deletes the render stored for the Bundle named bundleName, if
// any. The garbage collector does it when the Bundle is deleted.
func (s *Store) Delete(ctx context.Context, bundleName string) error {
	chunks, err := s.list(ctx, bundleName)
	if err != nil {
		return err
	}
	return s.deleteChunks(ctx, bundleName, chunks)
}

// deleteChunks deletes chunks of bundle's render and forgets what the
// cache holds of them.
func (s *Store) deleteChunks(ctx context.Context, bundle string, chunks []metav1.PartialObjectMetadata) error {
	var keys []cacheKey
	for i := range chunks {
		keys = append(keys, cacheKey{bundle: bundle, sum: chunks[i].Annotations[annotationSHA256]})
	}
	s.cache.forget(keys...)
	s.forgetChunks(chunks)
	for i := range chunks {
		if err := s.c.Delete(ctx, &chunks[i]); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting render chunk %s/%s of bundle %s: %w", s.namespace, chunks[i].Name, bundle, err)
		}
	}
	return nil
}
