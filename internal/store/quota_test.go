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

// held is the InUse answer for the digests of set, held by nobody named.
func held(set map[string]bool) map[string][]Holder {
	out := map[string][]Holder{}
	for d, ok := range set {
		if ok {
			out[d] = nil
		}
	}
	return out
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
				s.SetInUse(func() (map[string][]Holder, error) { return held(tt.inUse(a, b)), nil })
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
	s.SetInUse(func() (map[string][]Holder, error) { return nil, errors.New("cache not synced") })
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

// TestTenantQuota fills a store of 1000 bytes, 300 per tenant, with trees
// of tenants a and b, and checks which commit of which tenant fits, that
// a refusal names the quota and the revisions that hold it, and that a
// full tenant leaves room for the others.
func TestTenantQuota(t *testing.T) {
	type held struct {
		name, tenant string
		size         int
		holders      []Holder
	}
	tests := []struct {
		name   string
		held   []held // committed, then referenced by holders
		tenant string
		next   int
		msg    []string // the commit fails with ResourceLimit and this message; none: it fits
	}{
		{name: "within the tenant's quota",
			held:   []held{{"a1", "a", 100, []Holder{{Tenant: "a", Bundle: "a1-rev", BundleDeployment: "a1"}}}},
			tenant: "a", next: 200},
		{name: "over the tenant's quota: refused, naming the quota and the holders",
			held: []held{
				{"a1", "a", 100, []Holder{{Tenant: "a", Bundle: "a1-rev", BundleDeployment: "a1"}}},
				{"a2", "a", 150, []Holder{{Tenant: "a", Bundle: "a2-rev", BundleDeployment: "a2"}, {Tenant: "a", Bundle: "a2-old", BundleDeployment: "a2"}}},
			},
			tenant: "a", next: 100,
			msg: []string{"tenant a's quota of 300 bytes in the content store is full: it holds 250 bytes (Bundle a2-rev of BundleDeployment a2 and Bundle a2-old of BundleDeployment a2: 150 bytes, Bundle a1-rev of BundleDeployment a1: 100 bytes), and the new content needs 100 bytes more"}},
		{name: "another tenant's trees do not count",
			held: []held{
				{"b1", "b", 300, []Holder{{Tenant: "b", Bundle: "b1-rev", BundleDeployment: "b1"}}},
				{"b2", "b", 300, []Holder{{Tenant: "b", Bundle: "b2-rev"}}},
			},
			tenant: "a", next: 300},
		{name: "a tree two tenants reference counts for each",
			held: []held{
				{"s", "b", 250, []Holder{{Tenant: "b", Bundle: "b-rev"}, {Tenant: "a", Bundle: "a-rev"}}},
			},
			tenant: "a", next: 100, msg: []string{"tenant a's quota", "Bundle a-rev: 250 bytes"}},
		{name: "unreferenced trees count for nobody",
			held:   []held{{"old", "a", 250, nil}},
			tenant: "a", next: 300},
		{name: "larger than the tenant's quota",
			tenant: "a", next: 301, msg: []string{"the content is 301 bytes, larger than tenant a's quota of 300 bytes"}},
		{name: "no tenant: only the store's quota",
			held:   []held{{"a1", "a", 300, []Holder{{Tenant: "a", Bundle: "a1-rev"}}}},
			tenant: "", next: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(filepath.Join(t.TempDir(), "store"), WithQuota(1000), WithTenantQuota(300))
			if err != nil {
				t.Fatal(err)
			}
			refs := map[string][]Holder{}
			for _, h := range tt.held {
				d := commit(t, s, content(h.name, h.size))
				if h.holders != nil {
					refs[d] = h.holders
				}
			}
			s.SetInUse(func() (map[string][]Holder, error) { return refs, nil })
			staging, err := s.NewStaging()
			if err != nil {
				t.Fatal(err)
			}
			writeTree(t, staging, content("next", tt.next))
			_, err = s.CommitFor(staging, tt.tenant)
			if tt.msg == nil {
				if err != nil {
					t.Fatalf("CommitFor: %v", err)
				}
				return
			}
			if f := failure.As(err); f == nil || f.Reason != v1alpha2.ReasonResourceLimit {
				t.Fatalf("CommitFor = %v, want ResourceLimit", err)
			}
			for _, m := range tt.msg {
				if !strings.Contains(err.Error(), m) {
					t.Fatalf("CommitFor error %q does not contain %q", err, m)
				}
			}
		})
	}
}

// TestCheckTenant refuses a tenant whose trees fill its quota before
// anything is fetched, and no other tenant.
func TestCheckTenant(t *testing.T) {
	s, err := New(filepath.Join(t.TempDir(), "store"), WithQuota(1000), WithTenantQuota(300))
	if err != nil {
		t.Fatal(err)
	}
	d := commit(t, s, content("b", 300))
	s.SetInUse(func() (map[string][]Holder, error) {
		return map[string][]Holder{d: {{Tenant: "b", Bundle: "b-rev", BundleDeployment: "b"}}}, nil
	})
	if err := s.CheckTenant("a"); err != nil {
		t.Fatalf("CheckTenant(a) = %v, want nil", err)
	}
	err = s.CheckTenant("b")
	if f := failure.As(err); f == nil || !strings.Contains(err.Error(), "tenant b's quota of 300 bytes in the content store is full: it holds 300 bytes (Bundle b-rev of BundleDeployment b: 300 bytes); delete") {
		t.Fatalf("CheckTenant(b) = %v, want ResourceLimit naming the quota and the holder", err)
	}
	if used, held, err := s.TenantUsage("b"); err != nil || used != 300 || len(held) != 1 || held[0].Digest != d {
		t.Fatalf("TenantUsage(b) = %d, %v, %v", used, held, err)
	}
}

func TestQuantity(t *testing.T) {
	for n, want := range map[int64]string{0: "0 bytes", 1000: "1000 bytes", 1024: "1 KiB", 24 << 20: "24 MiB",
		24<<20 + 70: "24 MiB", 2560 << 20: "2.5 GiB", 64 << 20: "64 MiB", 1536: "1.5 KiB"} {
		if got := quantity(n); got != want {
			t.Errorf("quantity(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestTenantExtra checks that what a tenant keeps elsewhere (its renders
// in the cluster, WithTenantExtra) counts against its quota with its
// trees, and is named in the refusal.
func TestTenantExtra(t *testing.T) {
	renders := map[string]int64{"b": 200}
	s, err := New(filepath.Join(t.TempDir(), "store"), WithQuota(1000), WithTenantQuota(300),
		WithTenantExtra(func(tenant string) int64 { return renders[tenant] }))
	if err != nil {
		t.Fatal(err)
	}
	d := commit(t, s, content("b", 100))
	s.SetInUse(func() (map[string][]Holder, error) {
		return map[string][]Holder{d: {{Tenant: "b", Bundle: "b-rev", BundleDeployment: "b"}}}, nil
	})
	for _, tc := range []struct {
		tenant string
		want   string
	}{
		{tenant: "a"},
		{tenant: "b", want: "tenant b's quota of 300 bytes in the content store is full: it holds 100 bytes (Bundle b-rev of BundleDeployment b: 100 bytes), and its renders kept in the cluster 200 bytes; delete"},
	} {
		err := s.CheckTenant(tc.tenant)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckTenant(%s) = %v, want nil", tc.tenant, err)
		case tc.want != "" && (failure.As(err) == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("CheckTenant(%s) = %v, want ResourceLimit saying %q", tc.tenant, err, tc.want)
		}
	}
}
