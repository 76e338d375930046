package health

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"

	"k8s.io/utils/lru"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/limits"
)

// DefaultCacheSize is the number of compiled Checkers a Cache keeps.
const DefaultCacheSize = 256

// Cache keeps compiled Checkers by the content of their probes, so that a
// controller compiles a BundleDeployment's CEL once per spec rather than
// once per reconcile. It keeps at most its size, forgetting the least
// recently used. It is safe for concurrent use; the zero value is not
// usable, call NewCache.
type Cache struct {
	checkers *lru.Cache // [sha256.Size]byte → *Checker
}

// NewCache returns a Cache that keeps at most size Checkers
// (DefaultCacheSize when size <= 0).
func NewCache(size int) *Cache {
	return &Cache{checkers: lru.New(limits.PositiveOr(size, DefaultCacheSize))}
}

// Checker returns the Checker for probes, compiling them on first use.
// Compile errors are those of NewChecker and are not cached.
func (c *Cache) Checker(probes []v1alpha2.Probe) (*Checker, error) {
	raw, err := json.Marshal(probes)
	if err != nil {
		return nil, fmt.Errorf("hashing health probes: %w", err)
	}
	key := sha256.Sum256(raw)
	if ch, ok := c.checkers.Get(key); ok {
		return ch.(*Checker), nil
	}
	// Compile without holding the cache; two callers racing on a new spec
	// both compile, and the last one's result stays. That is cheaper than
	// serialising every compile.
	ch, err := NewChecker(probes)
	if err != nil {
		return nil, err
	}
	c.checkers.Add(key, ch)
	return ch, nil
}

// Len returns the number of cached Checkers.
func (c *Cache) Len() int {
	return c.checkers.Len()
}
