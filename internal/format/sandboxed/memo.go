package sandboxed

import (
	"bytes"
	"crypto/sha256"
	"sync"

	"k8s.io/utils/lru"
)

// docMemo holds the JSON values of parsed YAML documents by the digest of
// their bytes, forgetting the least recently used past max bytes. A
// document's value depends on its bytes only, so bundles (and tenants)
// that share a document share its entry: what one learns from it is what
// it already holds.
type docMemo struct {
	// mu serialises add, which keeps size and evicts by it.
	mu   sync.Mutex
	max  int
	size int
	// values maps a digest to its value. The bound is in bytes, not
	// entries, so the LRU has no count bound of its own: add evicts the
	// oldest entries while size is over max.
	values *lru.Cache
}

func newDocMemo(max int) *docMemo {
	m := &docMemo{max: max}
	// Evictions happen only in add's RemoveOldest, under m.mu.
	m.values = lru.NewWithEvictionFunc(0, func(_ lru.Key, v any) { m.size -= len(v.([]byte)) })
	return m
}

// get returns the value of the document with digest key.
func (m *docMemo) get(key [sha256.Size]byte) ([]byte, bool) {
	v, ok := m.values.Get(key)
	if !ok {
		return nil, false
	}
	return v.([]byte), true
}

// add remembers a copy of value for key (value may be part of a larger
// buffer, such as a child's whole output, which the memo must not hold),
// unless it alone is over the bound.
func (m *docMemo) add(key [sha256.Size]byte, value []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(value) > m.max {
		return
	}
	if _, ok := m.values.Get(key); ok {
		return // the same bytes have the same value
	}
	m.values.Add(key, bytes.Clone(value))
	m.size += len(value)
	for m.size > m.max {
		m.values.RemoveOldest()
	}
}
