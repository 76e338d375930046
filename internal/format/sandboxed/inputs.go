package sandboxed

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"
)

// maxRendered is how many inputs that rendered are remembered.
const maxRendered = 4096

// inputKey identifies a render request: the format, the content's
// directory (the content store's are content-addressed and never change)
// and the config.
func inputKey(req request) ([sha256.Size]byte, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return [sha256.Size]byte{}, fmt.Errorf("encoding the render request: %w", err)
	}
	return sha256.Sum256(b), nil
}

// inputSet is a set of request keys that forgets the oldest past max.
type inputSet struct {
	mu    sync.Mutex
	max   int
	keys  map[[sha256.Size]byte]bool
	order [][sha256.Size]byte
}

func newInputSet(max int) *inputSet {
	return &inputSet{max: max, keys: map[[sha256.Size]byte]bool{}}
}

func (s *inputSet) has(k [sha256.Size]byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[k]
}

func (s *inputSet) add(k [sha256.Size]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys[k] {
		return
	}
	s.keys[k] = true
	s.order = append(s.order, k)
	if len(s.order) > s.max {
		delete(s.keys, s.order[0])
		s.order = s.order[1:]
	}
}
