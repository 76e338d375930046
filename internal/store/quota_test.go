package store

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// content returns a tree of one file name holding n bytes.
func content(name string, n int) []node {
	return []node{{path: name, content: strings.Repeat("x", n)}}
}

// TestQuota fills a store with a quota of 250 bytes with trees of 100 bytes
// and checks which trees the next commit evicts, or why it is refused.
func TestQuota(t *testing.T) {
	tests := []struct {
		name    string
		inUse   func(a, b string) map[string]bool // nil: SetInUse is not called
		use     func(s *Store, a, b string)       // after committing a and b
		next    []node
		evicted func(a, b string) []string // the trees gone after the commit
		reason  string                     // the commit fails with this reason
		msg     string
	}{
		{name: "the least recently used unreferenced tree makes room",
			inUse:   func(string, string) map[string]bool { return map[string]bool{} },
			next:    content("c", 100),
			evicted: func(a, _ string) []string { return []string{a} }},
		{name: "using a tree keeps it",
			inUse:   func(string, string) map[string]bool { return map[string]bool{} },
			use:     func(s *Store, a, _ string) { _, _ = s.FS(a) },
			next:    content("c", 100),
			evicted: func(_, b string) []string { return []string{b} }},
		{name: "referenced trees are never evicted",
			inUse:   func(a, _ string) map[string]bool { return map[string]bool{a: true} },
			next:    content("c", 100),
			evicted: func(_, b string) []string { return []string{b} }},
		{name: "two trees go for a large one",
			inUse:   func(string, string) map[string]bool { return map[string]bool{} },
			next:    content("c", 200),
			evicted: func(a, b string) []string { return []string{a, b} }},
		{name: "everything referenced: refused, naming the quota",
			inUse: func(a, b string) map[string]bool { return map[string]bool{a: true, b: true} },
			next:  content("c", 100), reason: v1alpha2.ReasonResourceLimit,
			msg: "the content store's quota of 250 bytes is full: 200 bytes are content that Bundles still reference, and the new content needs 100 bytes more"},
		{name: "nothing is evicted when evicting would not make room",
			inUse: func(a, _ string) map[string]bool { return map[string]bool{a: true} },
			next:  content("c", 200), reason: v1alpha2.ReasonResourceLimit,
			msg: "quota of 250 bytes is full: 100 bytes are content that Bundles still reference, and the new content needs 200 bytes more"},
		{name: "without SetInUse every tree counts as referenced",
			next: content("c", 100), reason: v1alpha2.ReasonResourceLimit, msg: "quota of 250 bytes is full"},
		{name: "content larger than the quota",
			inUse: func(string, string) map[string]bool { return map[string]bool{} },
			next:  content("c", 251), reason: v1alpha2.ReasonResourceLimit,
			msg: "the content is 251 bytes, larger than the content store's quota of 250 bytes"},
		{name: "content that fits evicts nothing",
			inUse:   func(string, string) map[string]bool { return map[string]bool{} },
			next:    content("c", 50),
			evicted: func(string, string) []string { return nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(filepath.Join(t.TempDir(), "store"), WithQuota(250))
			if err != nil {
				t.Fatal(err)
			}
			a := commit(t, s, content("a", 100))
			b := commit(t, s, content("b", 100))
			if tt.inUse != nil {
				s.SetInUse(func() (map[string]bool, error) { return tt.inUse(a, b), nil })
			}
			if tt.use != nil {
				tt.use(s, a, b)
			}
			staging, err := s.NewStaging()
			if err != nil {
				t.Fatal(err)
			}
			writeTree(t, staging, tt.next)
			d, err := s.Commit(staging)
			if tt.reason != "" {
				f := failure.As(err)
				if f == nil || f.Reason != tt.reason || !strings.Contains(f.Message, tt.msg) {
					t.Fatalf("Commit error = %v, want a %s failure containing %q", err, tt.reason, tt.msg)
				}
				if !s.Has(a) || !s.Has(b) {
					t.Fatal("a refused commit evicted content")
				}
				return
			}
			if err != nil {
				t.Fatalf("Commit: %v", err)
			}
			var gone []string
			for _, x := range []string{a, b} {
				if !s.Has(x) {
					gone = append(gone, x)
				}
			}
			if want := tt.evicted(a, b); !slices.Equal(gone, want) {
				t.Fatalf("evicted %v, want %v", gone, want)
			}
			if !s.Has(d) {
				t.Fatal("the new content is not in the store")
			}
			used, _ := s.Usage()
			if used > 250 {
				t.Fatalf("usage %d is over the quota", used)
			}
		})
	}
}

// TestQuotaUsageSurvivesRestart checks that a new Store counts the trees an
// earlier process committed, and that Delete gives their bytes back.
func TestQuotaUsageSurvivesRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s, err := New(dir, WithQuota(1000))
	if err != nil {
		t.Fatal(err)
	}
	a := commit(t, s, content("a", 100))
	commit(t, s, []node{{path: "d/b", content: strings.Repeat("y", 300)}, {path: "e", dir: true}})
	s2, err := New(dir, WithQuota(1000))
	if err != nil {
		t.Fatal(err)
	}
	if used, quota := s2.Usage(); used != 400 || quota != 1000 {
		t.Fatalf("Usage() = %d, %d; want 400, 1000", used, quota)
	}
	if err := s2.Delete(a); err != nil {
		t.Fatal(err)
	}
	if used, _ := s2.Usage(); used != 300 {
		t.Fatalf("Usage() after Delete = %d, want 300", used)
	}
}

// TestQuotaInUseError checks that a failure to learn what is referenced
// refuses the commit as a transient error and evicts nothing.
func TestQuotaInUseError(t *testing.T) {
	s, err := New(filepath.Join(t.TempDir(), "store"), WithQuota(150))
	if err != nil {
		t.Fatal(err)
	}
	a := commit(t, s, content("a", 100))
	s.SetInUse(func() (map[string]bool, error) { return nil, errors.New("cache not synced") })
	staging, err := s.NewStaging()
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, staging, content("b", 100))
	_, err = s.Commit(staging)
	if err == nil || failure.As(err) != nil || !strings.Contains(err.Error(), "cache not synced") {
		t.Fatalf("Commit error = %v, want the transient error of InUse", err)
	}
	if !s.Has(a) {
		t.Fatal("content was evicted")
	}
	if _, err := os.Stat(staging); err != nil {
		t.Fatalf("staging is gone after a refused commit (%v); the caller removes it", err)
	}
}
