package helmrepository

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestTrimBoundsKeptIndexes: over maxKeptBytes, the indexes used least
// recently are dropped with their files, never the one just fetched nor
// one in use.
func TestTrimBoundsKeptIndexes(t *testing.T) {
	dir := t.TempDir()
	c := newCache()
	now := time.Now()
	add := func(key string, age time.Duration, inUse bool) string {
		file := filepath.Join(dir, key)
		if err := os.WriteFile(file, []byte(key), 0o600); err != nil {
			t.Fatal(err)
		}
		e := &entry{lock: make(chan struct{}, 1), file: file, used: now.Add(-age), size: maxKeptBytes / 2}
		if inUse {
			e.lock <- struct{}{}
		}
		c.entries[key] = e
		return file
	}
	oldest := add("oldest", 3*time.Minute, false)
	busy := add("busy", 4*time.Minute, true)
	older := add("older", 2*time.Minute, false)
	fresh := add("fresh", 5*time.Minute, false) // the one just fetched
	c.trim("fresh")
	for file, kept := range map[string]bool{oldest: false, older: false, busy: true, fresh: true} {
		if _, err := os.Stat(file); (err == nil) != kept {
			t.Errorf("%s: kept %v, want %v", filepath.Base(file), err == nil, kept)
		}
	}
	if len(c.entries) != 2 {
		t.Errorf("%d entries left, want 2", len(c.entries))
	}
}
