package schedule

import (
	"context"
	"testing"

	"github.com/rukpak/rukpak/internal/tenant"
)

// Parked BundleDeployments are woken one per worker given back: the
// longest waiting of the worker's tenant, urgent ones (drift) first, else
// of the other tenants in turn; each once.
func TestParked(t *testing.T) {
	p := newParked()
	for _, n := range []struct {
		tenant, name string
		urgent       bool
	}{
		{"a", "a1", false}, {"a", "a2", false}, {"b", "b1", false}, {"c", "c1", false}, {"a", "a1", false}, {"b", "b2", false},
		{"a", "a3", false}, {"a", "a4", true}, {"a", "a3", true}, {"a", "a4", false}, {"d", "d1", false}, {"d", "d2", true},
	} {
		p.park(n.tenant, n.name, n.urgent)
	}
	p.unpark("a", "a2")
	p.unpark("d", "d2")
	steps := []struct {
		releasing string
		want      string
	}{
		{"a", "a4"}, // urgent first, and parked again as not urgent it stays so
		{"a", "a3"}, // parked again as urgent: moved ahead of a1
		{"a", "a1"}, // its own tenant's first
		{"a", "b1"}, // none left: the others in turn
		{"a", "c1"},
		{"c", "b2"},
		{"a", "d1"},
		{"b", ""},
	}
	for i, s := range steps {
		got, ok := p.wake(s.releasing)
		if !ok {
			got = ""
		}
		if got != s.want {
			t.Fatalf("step %d: a worker of %s given back woke %q, want %q", i, s.releasing, got, s.want)
		}
	}
	// Woken, it may park again.
	p.park("a", "a1", false)
	if got, _ := p.wake("z"); got != "a1" {
		t.Fatalf("woke %q, want a1 parked again", got)
	}
}

// A reconcile refused a worker is parked, and giving a worker back wakes
// it (and gives the worker back, once).
func TestAcquireWorker(t *testing.T) {
	s := &Scheduler{workers: tenant.NewSlots(1, 1), parked: newParked(), drifted: newNames()}
	ctx := tenant.WithContext(context.Background(), "team")
	release, ok := s.acquireWorker(ctx, "team", "a")
	if !ok {
		t.Fatal("the only worker refused")
	}
	if _, ok := s.acquireWorker(ctx, "team", "b"); ok {
		t.Fatal("a second worker given")
	}
	if _, in := s.parked.in["b"]; !in {
		t.Fatal("b not parked")
	}
	release()
	if _, in := s.parked.in["b"]; in {
		t.Fatal("b still parked after a worker was given back")
	}
	release2, ok := s.acquireWorker(ctx, "team", "b")
	if !ok {
		t.Fatal("the worker given back was not free")
	}
	release2()
	if u := s.workers.Usage(); u.Held != 0 {
		t.Fatalf("%d workers held after both were given back", u.Held)
	}
}
