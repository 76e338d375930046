package catalog

import (
	"context"
	"fmt"
	"sync"

	"github.com/rukpak/rukpak/internal/catalog"
)

// DefaultCacheSize is how many catalogs (by digest and credentials) the
// cache keeps.
const DefaultCacheSize = 4

// cache keeps parsed catalogs by key (a catalog image digest and the
// credentials it was read with), for every source that follows them. One
// load of a key is in flight at a time; a failed load is not kept. It
// keeps the size keys used last.
type cache struct {
	mu      sync.Mutex
	size    int
	tick    uint64
	entries map[string]*entry
}

// entry is one key's catalog, or its load in flight.
type entry struct {
	done    chan struct{} // closed when cat and err are set
	cat     *catalog.Catalog
	err     error
	lastUse uint64
}

func newCache(size int) *cache {
	return &cache{size: size, entries: map[string]*entry{}}
}

// get returns the catalog of key, loading it with load on a miss.
// Callers of a key whose load is in flight wait for it (or for ctx).
func (c *cache) get(ctx context.Context, key string, load func() (*catalog.Catalog, error)) (*catalog.Catalog, error) {
	c.mu.Lock()
	c.tick++
	e, ok := c.entries[key]
	if ok {
		e.lastUse = c.tick
		c.mu.Unlock()
		select {
		case <-e.done:
			return e.cat, e.err
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for catalog %s: %w", key, context.Cause(ctx))
		}
	}
	e = &entry{done: make(chan struct{}), lastUse: c.tick}
	c.entries[key] = e
	c.evict()
	c.mu.Unlock()

	e.cat, e.err = load()
	close(e.done)
	if e.err != nil {
		c.mu.Lock()
		if c.entries[key] == e {
			delete(c.entries, key)
		}
		c.mu.Unlock()
	}
	return e.cat, e.err
}

// evict drops the entries used longest ago while there are more than
// size; c.mu is held.
func (c *cache) evict() {
	for len(c.entries) > c.size {
		oldest, at := "", ^uint64(0)
		for d, e := range c.entries {
			if e.lastUse < at {
				oldest, at = d, e.lastUse
			}
		}
		delete(c.entries, oldest)
	}
}

// len returns how many keys the cache holds.
func (c *cache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
