package resolvecache

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/source"
	"github.com/rukpak/rukpak/internal/source/sourcekey"
)

// MaxAge is how long a resolution answers by default: the shortest
// spec.pollInterval, so a BundleDeployment polling at that interval sees
// a new version within two intervals at most.
const MaxAge = v1alpha2.MinPollInterval

// Contents reads the Secrets and ConfigMaps a source names (in
// rukpak-system): *credentials.Reader.
type Contents = sourcekey.Contents

// Outcome says how a call of Resolve was answered, for Observe.
type Outcome string

// Outcomes of a resolution.
const (
	// LookedUp is a resolution made by the source (over the network).
	LookedUp Outcome = "looked-up"
	// Shared is a resolution answered by another caller's lookup, kept or
	// under way.
	Shared Outcome = "shared"
)

// Cache holds resolutions by source and credentials. The zero value is
// not usable; New makes one.
type Cache struct {
	contents Contents
	maxAge   time.Duration
	now      func() time.Time
	observe  func(t v1alpha2.SourceType, o Outcome)
	// onWait, when set, is called when a caller starts waiting for
	// another's lookup (tests).
	onWait func()

	mu        sync.Mutex
	entries   map[string]*entry
	lastSweep time.Time
}

// entry is one resolution, done when done is closed.
type entry struct {
	done   chan struct{}
	at     time.Time
	pinned v1alpha2.BundleSource
	err    error
	// abandoned is set when the lookup ended with its caller's context:
	// waiters look the source up again.
	abandoned bool
}

// Option configures a Cache.
type Option func(*Cache)

// WithMaxAge is how long a resolution answers; d <= 0 keeps MaxAge.
func WithMaxAge(d time.Duration) Option {
	return func(c *Cache) {
		if d > 0 {
			c.maxAge = d
		}
	}
}

// WithClock replaces time.Now, for tests.
func WithClock(now func() time.Time) Option { return func(c *Cache) { c.now = now } }

// WithObserver is told of every resolution of a floating source and how
// it was answered (the manager counts them in a metric).
func WithObserver(f func(t v1alpha2.SourceType, o Outcome)) Option {
	return func(c *Cache) { c.observe = f }
}

// New returns an empty cache reading credentials through contents.
func New(contents Contents, opts ...Option) *Cache {
	c := &Cache{contents: contents, maxAge: MaxAge, now: time.Now, entries: map[string]*entry{},
		observe: func(v1alpha2.SourceType, Outcome) {}}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Wrap returns every source of r answering its resolutions of floating
// sources through c; the rest of what the sources do is theirs.
func (c *Cache) Wrap(r source.Registry) source.Registry {
	out := make(source.Registry, len(r))
	for t, s := range r {
		out[t] = &shared{inner: s, cache: c}
	}
	return out
}

// resolve answers src from the cache, or looks it up with lookup and
// keeps what it gives.
func (c *Cache) resolve(ctx context.Context, src v1alpha2.BundleSource,
	lookup func(context.Context, v1alpha2.BundleSource) (v1alpha2.BundleSource, error)) (v1alpha2.BundleSource, error) {
	key, err := c.key(ctx, src)
	if err != nil {
		// A credential that cannot be read: the source says why, as it
		// would without the cache.
		return lookup(ctx, src)
	}
	for {
		e, leader := c.entry(key)
		if leader {
			c.observe(src.Type, LookedUp)
			pinned, err := lookup(ctx, src)
			c.finish(key, e, pinned, err, ctx.Err() != nil)
			return pinned, err
		}
		if c.onWait != nil {
			c.onWait()
		}
		select {
		case <-e.done:
		case <-ctx.Done():
			return v1alpha2.BundleSource{}, fmt.Errorf("waiting for a lookup of %s: %w", source.Describe(src), ctx.Err())
		}
		if e.abandoned {
			continue
		}
		c.observe(src.Type, Shared)
		return *e.pinned.DeepCopy(), e.err
	}
}

// entry returns the entry of key that answers now, or a new one the
// caller (the leader) must finish.
func (c *Cache) entry(key string) (e *entry, leader bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	c.sweep(now)
	if e := c.entries[key]; e != nil {
		select {
		case <-e.done:
			if now.Sub(e.at) < c.maxAge && !e.abandoned {
				return e, false
			}
		default:
			return e, false // under way
		}
	}
	e = &entry{done: make(chan struct{})}
	c.entries[key] = e
	return e, true
}

// finish records the leader's lookup in e and wakes its waiters. A lookup
// its caller's context ended is dropped.
func (c *Cache) finish(key string, e *entry, pinned v1alpha2.BundleSource, err error, abandoned bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.at, e.pinned, e.err, e.abandoned = c.now(), *pinned.DeepCopy(), err, abandoned
	if abandoned && c.entries[key] == e {
		delete(c.entries, key)
	}
	close(e.done)
}

// sweep drops, at most once per maxAge, the entries that no longer
// answer, so that the cache holds what was looked up in the last interval
// or two, whatever the number of sources ever named. c.mu is held.
func (c *Cache) sweep(now time.Time) {
	if now.Sub(c.lastSweep) < c.maxAge {
		return
	}
	c.lastSweep = now
	for k, e := range c.entries {
		select {
		case <-e.done:
			if now.Sub(e.at) >= c.maxAge {
				delete(c.entries, k)
			}
		default:
		}
	}
}

// Len is the number of entries held, for tests and metrics.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// key names the resolution of src (package sourcekey).
func (c *Cache) key(ctx context.Context, src v1alpha2.BundleSource) (string, error) {
	return sourcekey.Of(ctx, c.contents, []v1alpha2.BundleSource{src})
}
