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
// many goroutines at once, as concurrent reconciles (each loading, changing
// and saving its own BundleDeployment's record) and drift events do; run
// with -race (make test does) it shows that all shared access is locked.
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
			// Reconciles of one BundleDeployment never overlap: each
			// goroutine reconciles its own, and reads the others' as
			// drift events do.
			name, other := fmt.Sprint("bd", g), fmt.Sprint("bd", (g+1)%8)
			for i := range 200 {
				rec := m.load(name)
				if rec.applied == nil || i%7 == 0 {
					rec.applied = &appliedState{bundle: "r", objects: map[inventory.ID]appliedObject{id(i): {rv: "1"}}}
				}
				_ = m.object(rec.applied, id(i))
				m.reapplied(rec.applied, &apply.ChangeSet{Entries: []apply.Change{{ID: id(i), Action: apply.Configured, ResourceVersion: "2"}}})
				_ = m.records(rec.applied)
				rec.failed = &failedRevision{bundle: "r", generation: int64(i)}
				m.nextRetry(name, rec, "r")
				rec.approval = &approvedRequester{generation: int64(i)}
				rec.setVerdicts(nil, map[inventory.ID]healthVerdict{id(i): {rv: fmt.Sprint(i)}})
				rec.verdict(nil, id(i), fmt.Sprint(i))
				m.save(name, rec)
				m.appliedObject(other, id(i))
				m.mayHaveApplied(other, id(i))
				m.otherUID(other, "uid")
				m.claim(id(i), name)
				m.claimedByOther(name, id(i+1))
				m.release(&apply.ChangeSet{Entries: []apply.Change{{ID: id(i), Action: apply.Skipped}}}, "bd9")
				m.useIdentity(name, identity.Identity{Namespace: "ns", Name: fmt.Sprint("sa", i%2)})
				if i%50 == 0 {
					m.forgetRetry(name, rec)
					m.dropClaims(name)
					m.forget(name)
				}
			}
		}()
	}
	wg.Wait()
}

// TestMemoryLoadSave: a reconcile works on a copy of its BundleDeployment's
// record; what it changes is seen by others (drift events, the next
// reconcile) once it saves it, an empty record is not kept, and forget
// drops the record.
func TestMemoryLoadSave(t *testing.T) {
	m := newMemory()
	cm := inventory.ID{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "a"}
	rec := m.load("bd")
	if *rec != (remembered{}) {
		t.Fatalf("first load = %+v, want an empty record", *rec)
	}
	rec.applied = &appliedState{uid: "u1", bundle: "r1", objects: map[inventory.ID]appliedObject{cm: {rv: "7"}}}
	rec.number = 1
	if _, ok := m.appliedObject("bd", cm); ok {
		t.Fatal("a drift event saw what the reconcile applied before it saved it")
	}
	if got := m.load("bd"); got.number != 0 {
		t.Fatal("another load saw an unsaved change")
	}
	m.save("bd", rec)
	rec.number = 5 // the saved record is a copy too
	if a, ok := m.appliedObject("bd", cm); !ok || a.rv != "7" {
		t.Fatalf("appliedObject after save = %+v, %v; want rv 7", a, ok)
	}
	if got := m.load("bd"); got.number != 1 || got.applied.bundle != "r1" {
		t.Fatalf("next load = %+v, want the saved record", *got)
	}
	if !m.otherUID("bd", "u2") || m.otherUID("bd", "u1") {
		t.Fatal("otherUID does not compare with the saved record's UID")
	}
	m.save("empty", &remembered{})
	if _, ok := m.saved["empty"]; ok {
		t.Fatal("an empty record was kept")
	}
	m.forget("bd")
	if got := m.load("bd"); *got != (remembered{}) {
		t.Fatalf("load after forget = %+v, want an empty record", *got)
	}
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
	rec := &remembered{}
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
	rec.setVerdicts(c1, map[inventory.ID]healthVerdict{a: {rv: "10"}, b: {rv: "11", unhealthy: bad}})
	tests := []struct {
		name    string
		checker *health.Checker
		id      inventory.ID
		rv      string
		want    *health.Unhealthy
		wantOK  bool
	}{
		{"healthy at the same resourceVersion", c1, a, "10", nil, true},
		{"unhealthy at the same resourceVersion", c1, b, "11", bad, true},
		{"changed since", c1, a, "12", nil, false},
		{"no resourceVersion", c1, a, "", nil, false},
		{"other probes", c2, a, "10", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := rec.verdict(tt.checker, tt.id, tt.rv)
			if ok != tt.wantOK || got != tt.want {
				t.Fatalf("verdict = %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
	rec.setVerdicts(c1, map[inventory.ID]healthVerdict{b: {rv: "11", unhealthy: bad}})
	if _, ok := rec.verdict(c1, a, "10"); ok {
		t.Fatal("a verdict the last check did not make was kept")
	}
	m := newMemory()
	m.save("bd", rec)
	m.forget("bd")
	if _, ok := m.load("bd").verdict(c1, b, "11"); ok {
		t.Fatal("verdicts kept after forget")
	}
}

// Retries of a revision back off from retryBase, doubling up to retryMax;
// another revision, an install or a healthy revision (clearFailed:
// forgetRetry) or forgetting the BundleDeployment starts again from the
// first.
func TestRetryBackoff(t *testing.T) {
	m := newMemory()
	recs := map[string]*remembered{}
	rec := func(name string) *remembered {
		if recs[name] == nil {
			recs[name] = m.load(name)
		}
		return recs[name]
	}
	next := func(name, revision string) time.Duration { return m.nextRetry(name, rec(name), revision) }
	steps := []struct {
		do   func() time.Duration
		want time.Duration
	}{
		{func() time.Duration { return next("a", "r1") }, time.Second},
		{func() time.Duration { return next("a", "r1") }, 2 * time.Second},
		{func() time.Duration { return next("a", "r1") }, 4 * time.Second},
		{func() time.Duration { return next("b", "r1") }, time.Second},
		{func() time.Duration { return next("a", "r2") }, time.Second},
		{func() time.Duration { return next("a", "r2") }, 2 * time.Second},
		{func() time.Duration { m.forgetRetry("a", rec("a")); return next("a", "r2") }, time.Second},
		{func() time.Duration {
			// Saved by its reconcile, then the BundleDeployment is gone.
			m.save("b", rec("b"))
			m.forget("b")
			delete(recs, "b")
			return next("b", "r1")
		}, time.Second},
		{func() time.Duration {
			for range 10 {
				next("c", "r1")
			}
			return next("c", "r1")
		}, retryMax},
	}
	for i, st := range steps {
		if got := st.do(); got != st.want {
			t.Errorf("step %d: next retry in %s, want %s", i, got, st.want)
		}
	}
	// An earlier revision's count is not kept once another is retried.
	next("d", "r1")
	next("d", "r2")
	if got := next("d", "r1"); got != time.Second {
		t.Errorf("back to r1: next retry in %s, want %s", got, time.Second)
	}
	if n := m.retries.NumRequeues(retryKey{name: "d", revision: "r2"}); n != 0 {
		t.Errorf("r2 of d still counts %d retries after d moved to r1", n)
	}
}

// mayHaveApplied: an object the owner's record lists, or any object while
// it has no record; not one its record leaves out, nor another owner's.
func TestMayHaveApplied(t *testing.T) {
	m := newMemory()
	cm := func(name string) inventory.ID {
		return inventory.ID{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: name}
	}
	rec := m.load("bd")
	rec.applied = &appliedState{bundle: "r", objects: map[inventory.ID]appliedObject{cm("mine"): {rv: "1"}}}
	m.save("bd", rec)
	for _, tc := range []struct {
		owner string
		id    inventory.ID
		want  bool
	}{
		{owner: "bd", id: cm("mine"), want: true},
		{owner: "bd", id: cm("labelled-by-another-team")},
		{owner: "not-reconciled-yet", id: cm("any"), want: true},
	} {
		if got := m.mayHaveApplied(tc.owner, tc.id); got != tc.want {
			t.Errorf("mayHaveApplied(%s, %s) = %v, want %v", tc.owner, tc.id.Name, got, tc.want)
		}
	}
}
