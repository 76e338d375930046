package bundledeployment

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/health"
	"github.com/rukpak/rukpak/internal/identity"
	"github.com/rukpak/rukpak/internal/inventory"
)

// TestMemoryUnderConcurrentReconciles drives every method of memory from
// many goroutines at once, as concurrent reconciles and drift events do;
// run with -race (make test does) it shows that all access is locked.
func TestMemoryUnderConcurrentReconciles(t *testing.T) {
	m := newMemory()
	id := func(i int) inventory.ID {
		return inventory.ID{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: fmt.Sprint("cm", i%5)}
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprint("bd", g%3)
			for i := range 200 {
				st := &appliedState{bundle: "r", objects: map[inventory.ID]appliedObject{id(i): {rv: "1"}}}
				m.setApplied(name, st)
				if cur := m.appliedState(name); cur != nil {
					_ = m.object(cur, id(i))
					m.reapplied(cur, &apply.ChangeSet{Entries: []apply.Change{{ID: id(i), Action: apply.Configured, ResourceVersion: "2"}}})
				}
				m.appliedObject(name, id(i))
				m.otherUID(name, "uid")
				m.claim(id(i), name)
				m.claimedByOther(name, id(i+1))
				m.release(&apply.ChangeSet{Entries: []apply.Change{{ID: id(i), Action: apply.Skipped}}}, "bd9")
				m.setFailed(name, failedRevision{bundle: "r", generation: int64(i)})
				m.failedRevision(name)
				m.nextRetry(name, "r")
				m.setApproval(name, approvedRequester{generation: int64(i)})
				m.approval(name)
				m.useIdentity(name, identity.Identity{Namespace: "ns", Name: fmt.Sprint("sa", i%2)})
				m.setVerdicts(name, nil, map[inventory.ID]healthVerdict{id(i): {rv: fmt.Sprint(i)}})
				m.verdict(name, nil, id(i), fmt.Sprint(i))
				if i%50 == 0 {
					m.clearFailed(name)
					m.resetRetries(name)
					m.dropClaims(name)
					m.forget(name)
				}
			}
		}()
	}
	wg.Wait()
}

func TestMemoryIdentitiesInUse(t *testing.T) {
	m := newMemory()
	a := identity.Identity{Namespace: "ns", Name: "a"}
	b := identity.Identity{Namespace: "ns", Name: "b"}
	steps := []struct {
		name, bd   string
		use        *identity.Identity // nil: forget bd
		wantUnused *identity.Identity
	}{
		{name: "first use", bd: "x", use: &a},
		{name: "a second BundleDeployment shares it", bd: "y", use: &a},
		{name: "x moves on: a is still used by y", bd: "x", use: &b},
		{name: "y moves on: a is unused", bd: "y", use: &b, wantUnused: &a},
		{name: "x is forgotten: y still uses b", bd: "x"},
		{name: "y is forgotten: b is unused", bd: "y", wantUnused: &b},
	}
	for _, st := range steps {
		var got identity.Identity
		var unused bool
		if st.use != nil {
			got, unused = m.useIdentity(st.bd, *st.use)
		} else {
			got, unused = m.forget(st.bd)
		}
		if (st.wantUnused != nil) != unused || (unused && got != *st.wantUnused) {
			t.Fatalf("%s: unused = %v (%v), want %v", st.name, unused, got, st.wantUnused)
		}
	}
}

// TestHealthVerdicts: a verdict is reused only for the same object at the
// same resourceVersion, judged by the same checker; a check replaces the
// last one's verdicts, and forgetting the BundleDeployment drops them.
func TestHealthVerdicts(t *testing.T) {
	m := newMemory()
	probes := health.NewCache(0)
	c1, err := probes.Checker(nil)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := probes.Checker([]v1alpha2.Probe{{Selector: v1alpha2.ProbeSelector{Kind: "ConfigMap"}, CEL: "true", Message: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	a := inventory.ID{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "ns", Name: "a"}
	b := inventory.ID{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "ns", Name: "b"}
	bad := &health.Unhealthy{Object: b.String(), Reason: "not available"}
	m.setVerdicts("bd", c1, map[inventory.ID]healthVerdict{a: {rv: "10"}, b: {rv: "11", unhealthy: bad}})
	tests := []struct {
		name    string
		bd      string
		checker *health.Checker
		id      inventory.ID
		rv      string
		want    *health.Unhealthy
		wantOK  bool
	}{
		{"healthy at the same resourceVersion", "bd", c1, a, "10", nil, true},
		{"unhealthy at the same resourceVersion", "bd", c1, b, "11", bad, true},
		{"changed since", "bd", c1, a, "12", nil, false},
		{"no resourceVersion", "bd", c1, a, "", nil, false},
		{"other probes", "bd", c2, a, "10", nil, false},
		{"another BundleDeployment", "other", c1, a, "10", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := m.verdict(tt.bd, tt.checker, tt.id, tt.rv)
			if ok != tt.wantOK || got != tt.want {
				t.Fatalf("verdict = %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
	m.setVerdicts("bd", c1, map[inventory.ID]healthVerdict{b: {rv: "11", unhealthy: bad}})
	if _, ok := m.verdict("bd", c1, a, "10"); ok {
		t.Fatal("a verdict the last check did not make was kept")
	}
	m.forget("bd")
	if _, ok := m.verdict("bd", c1, b, "11"); ok {
		t.Fatal("verdicts kept after forget")
	}
}

// Retries of a revision back off from retryBase, doubling up to retryMax;
// another revision, an install (resetRetries) or forgetting the
// BundleDeployment starts again from the first.
func TestRetryBackoff(t *testing.T) {
	m := newMemory()
	steps := []struct {
		do   func() time.Duration
		want time.Duration
	}{
		{func() time.Duration { return m.nextRetry("a", "r1") }, time.Second},
		{func() time.Duration { return m.nextRetry("a", "r1") }, 2 * time.Second},
		{func() time.Duration { return m.nextRetry("a", "r1") }, 4 * time.Second},
		{func() time.Duration { return m.nextRetry("b", "r1") }, time.Second},
		{func() time.Duration { return m.nextRetry("a", "r2") }, time.Second},
		{func() time.Duration { return m.nextRetry("a", "r2") }, 2 * time.Second},
		{func() time.Duration { m.resetRetries("a"); return m.nextRetry("a", "r2") }, time.Second},
		{func() time.Duration { m.clearFailed("a"); return m.nextRetry("a", "r2") }, time.Second},
		{func() time.Duration { m.forget("b"); return m.nextRetry("b", "r1") }, time.Second},
		{func() time.Duration {
			for range 10 {
				m.nextRetry("c", "r1")
			}
			return m.nextRetry("c", "r1")
		}, retryMax},
	}
	for i, st := range steps {
		if got := st.do(); got != st.want {
			t.Errorf("step %d: next retry in %s, want %s", i, got, st.want)
		}
	}
	// An earlier revision's count is not kept once another is retried.
	m.nextRetry("d", "r1")
	m.nextRetry("d", "r2")
	if got := m.nextRetry("d", "r1"); got != time.Second {
		t.Errorf("back to r1: next retry in %s, want %s", got, time.Second)
	}
	if n := m.retries.NumRequeues(retryKey{name: "d", revision: "r2"}); n != 0 {
		t.Errorf("r2 of d still counts %d retries after d moved to r1", n)
	}
}
