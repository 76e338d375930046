package renderstore

import (
	"fmt"
	"testing"
)

func TestRenderCacheBounds(t *testing.T) {
	tests := []struct {
		name        string
		entries     int
		bytes       int64
		sizes       []int64 // added in order, as renders "r0", "r1", …
		wantCached  []int
		wantEntries int
		wantBytes   int64
	}{
		{name: "all fit", entries: 4, bytes: 400, sizes: []int64{10, 20, 30}, wantCached: []int{0, 1, 2}, wantEntries: 3, wantBytes: 60},
		{name: "entries bound", entries: 2, bytes: 400, sizes: []int64{10, 20, 30}, wantCached: []int{1, 2}, wantEntries: 2, wantBytes: 50},
		{name: "bytes bound", entries: 10, bytes: 100, sizes: []int64{25, 25, 25, 25, 25}, wantCached: []int{1, 2, 3, 4}, wantEntries: 4, wantBytes: 100},
		{name: "too large for the cache", entries: 10, bytes: 100, sizes: []int64{10, 26, 10}, wantCached: []int{0, 2}, wantEntries: 2, wantBytes: 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newRenderCache(tt.entries, tt.bytes)
			for i, size := range tt.sizes {
				c.add(cacheKey{bundle: fmt.Sprintf("r%d", i), sum: "s"}, &Render{Revision: fmt.Sprintf("r%d", i)}, size)
			}
			cached := map[int]bool{}
			for _, i := range tt.wantCached {
				cached[i] = true
			}
			for i := range tt.sizes {
				r, ok := c.get(cacheKey{bundle: fmt.Sprintf("r%d", i), sum: "s"})
				if ok != cached[i] || (ok && r.Revision != fmt.Sprintf("r%d", i)) {
					t.Fatalf("render r%d cached: %v, want %v", i, ok, cached[i])
				}
			}
			if n, b := c.usage(); n != tt.wantEntries || b != tt.wantBytes {
				t.Fatalf("%d renders, %d bytes cached; want %d, %d", n, b, tt.wantEntries, tt.wantBytes)
			}
		})
	}
}

func TestRenderCacheKeysAndForget(t *testing.T) {
	c := newRenderCache(8, 1000)
	a1, a2 := cacheKey{bundle: "a", sum: "1"}, cacheKey{bundle: "a", sum: "2"}
	c.add(a1, &Render{FormatVersion: "one"}, 10)
	c.add(a1, &Render{FormatVersion: "again"}, 10) // the same payload: kept once
	if r, ok := c.get(a1); !ok || r.FormatVersion != "one" {
		t.Fatalf("a1 = %v, %v", r, ok)
	}
	if _, ok := c.get(a2); ok {
		t.Fatal("another payload of the same bundle is cached")
	}
	c.add(a2, &Render{FormatVersion: "two"}, 10)
	c.forget(a1, cacheKey{bundle: "b", sum: "1"})
	if _, ok := c.get(a1); ok {
		t.Fatal("a1 is still cached")
	}
	if n, b := c.usage(); n != 1 || b != 10 {
		t.Fatalf("%d renders, %d bytes cached; want 1, 10", n, b)
	}
}
