package renderstore

import (
	"sync"

	"k8s.io/utils/lru"
)

// cacheKey names one render: a Bundle and the sha256 of the payload (hex).
type cacheKey struct {
	bundle string
	sum    string
}

// cacheEntry is a cached render and the size of its JSON.
type cacheEntry struct {
	render *Render
	size   int64
}

// renderCache holds decoded renders, forgetting the least recently used
// past maxEntries renders or maxBytes bytes of JSON (decoded objects take
// a few times their JSON in memory). A render over a quarter of maxBytes
// is not cached: it would push out most of the others.
type renderCache struct {
	// mu serialises add and forget, which keep size.
	mu       sync.Mutex
	maxBytes int64
	size     int64
	renders  *lru.Cache
}

func newRenderCache(maxEntries int, maxBytes int64) *renderCache {
	c := &renderCache{maxBytes: maxBytes}
	// Evictions happen in add and forget only, under c.mu.
	c.renders = lru.NewWithEvictionFunc(maxEntries, func(_ lru.Key, v any) { c.size -= v.(cacheEntry).size })
	return c
}

// get returns the cached render of key. It is shared: clone it before
// handing it out.
func (c *renderCache) get(key cacheKey) (*Render, bool) {
	v, ok := c.renders.Get(key)
	if !ok {
		return nil, false
	}
	return v.(cacheEntry).render, true
}

// add caches r (which nobody else may change) as key, size bytes of JSON.
func (c *renderCache) add(key cacheKey, r *Render, size int64) {
	if !c.fits(size) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.renders.Get(key); ok {
		return // the same payload decodes to the same render
	}
	c.renders.Add(key, cacheEntry{render: r, size: size})
	c.size += size
	for c.size > c.maxBytes {
		c.renders.RemoveOldest()
	}
}

// forget drops the cached renders of keys.
func (c *renderCache) forget(keys ...cacheKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range keys {
		c.renders.Remove(k)
	}
}

// usage returns how many renders are cached and their bytes of JSON.
func (c *renderCache) usage() (int, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.renders.Len(), c.size
}

// fits reports whether a render of size bytes of JSON would be cached.
func (c *renderCache) fits(size int64) bool { return size <= c.maxBytes/4 }
