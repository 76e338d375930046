package health

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// DefaultCacheSize is the number of compiled Checkers a Cache keeps.
const DefaultCacheSize = 256

// Cache keeps compiled Checkers by the content of their probes, so that a
// controller compiles a BundleDeployment's CEL once per spec rather than
// once per reconcile. It is safe for concurrent use; the zero value is not
// usable, call NewCache.
type Cache struct {
	mu       sync.Mutex
	size     int
	checkers map[[sha256.Size]byte]*Checker
}

// NewCache returns a Cache that keeps at most size Checkers
// (DefaultCacheSize when size <= 0).
func NewCache(size int) *Cache {
	if size <= 0 {
		size = DefaultCacheSize
	}
	return &Cache{size: size, checkers: make(map[[sha256.Size]byte]*Checker)}
}

// Checker returns the Checker for probes, compiling them on first use.
// Compile errors are those of NewChecker and are not cached.
func (c *Cache) Checker(probes []v1alpha2.Probe) (*Checker, error) {
	raw, err := json.Marshal(probes)
	if err != nil {
		return nil, fmt.Errorf("hashing health probes: %w", err)
	}
	key := sha256.Sum256(raw)

	c.mu.Lock()
	ch, ok := c.checkers[key]
	c.mu.Unlock()
	if ok {
		return ch, nil
	}

	// Compile outside the lock; two callers racing on a new spec both
	// compile, and one result wins. That is cheaper than serialising every
	// compile.
	ch, err = NewChecker(probes)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.checkers) >= c.size {
		// Specs change rarely; starting over when full keeps the cache
		// bounded without tracking recency.
		clear(c.checkers)
	}
	c.checkers[key] = ch
	return ch, nil
}

// Len returns the number of cached Checkers.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.checkers)
}
