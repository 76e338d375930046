package tenant

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec v1alpha2.BundleDeploymentSpec
		want string
	}{
		{"a ServiceAccount's namespace", v1alpha2.BundleDeploymentSpec{InstallNamespace: "team-a", ServiceAccount: &v1alpha2.ServiceAccountReference{Name: "installer"}}, "team-a"},
		{"the manager's identity", v1alpha2.BundleDeploymentSpec{InstallNamespace: "team-a"}, Manager},
		{"an empty ServiceAccount name", v1alpha2.BundleDeploymentSpec{InstallNamespace: "team-a", ServiceAccount: &v1alpha2.ServiceAccountReference{}}, Manager},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Of(&v1alpha2.BundleDeployment{Spec: tc.spec}); got != tc.want {
				t.Fatalf("Of = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFrom(t *testing.T) {
	if got := From(context.Background()); got != Unattributed {
		t.Fatalf("From(no tenant) = %q, want %q", got, Unattributed)
	}
	if got := From(WithContext(context.Background(), "team-a")); got != "team-a" {
		t.Fatalf("From = %q, want team-a", got)
	}
}

// TestSlotsBounds runs many holders of several tenants at once and checks
// the peaks against the bounds, and that each bound was reached.
func TestSlotsBounds(t *testing.T) {
	for _, tc := range []struct {
		name             string
		total, perTenant int
		tenants, each    int
		wantTotal, wantT int
	}{
		{"per tenant below the total", 4, 2, 3, 8, 4, 2},
		{"one slot each", 4, 1, 6, 4, 4, 1},
		{"per tenant over the total is the total", 2, 5, 2, 6, 2, 2},
		{"per tenant 0 is the total", 3, 0, 1, 6, 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSlots(tc.total, tc.perTenant)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range tc.tenants {
				ctx := WithContext(context.Background(), string(rune('a'+i)))
				for range tc.each {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						release, err := s.Acquire(ctx, "work")
						if err != nil {
							t.Error(err)
							return
						}
						time.Sleep(5 * time.Millisecond)
						release()
					}()
				}
			}
			close(start)
			wg.Wait()
			u := s.Usage()
			if u.Running != 0 || u.Peak != tc.wantTotal {
				t.Fatalf("running %d, peak %d; want 0 and %d", u.Running, u.Peak, tc.wantTotal)
			}
			for tn, p := range u.PeakOf {
				if p > tc.wantT {
					t.Fatalf("tenant %s held %d slots at once, more than %d", tn, p, tc.wantT)
				}
			}
			if len(s.tenants) != 0 {
				t.Fatalf("%d tenants' shares left after every release", len(s.tenants))
			}
		})
	}
}

// TestSlotsTenantDoesNotBlockOthers fills one tenant's share and has
// another tenant acquire at once, while the first tenant's next waits.
func TestSlotsTenantDoesNotBlockOthers(t *testing.T) {
	s := NewSlots(4, 2)
	a, b := WithContext(context.Background(), "a"), WithContext(context.Background(), "b")
	for range 2 {
		if _, err := s.Acquire(a, "work"); err != nil {
			t.Fatal(err)
		}
	}
	// a's third waits for its share, holding none of the total...
	waiting, cancel := context.WithTimeout(a, 50*time.Millisecond)
	defer cancel()
	_, err := s.Acquire(waiting, "chart x")
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "tenant a's 2 slots to start chart x") {
		t.Fatalf("a's third Acquire: %v, want it to wait for its share", err)
	}
	// ...so b gets both of its own at once.
	for i := range 2 {
		ctx, cancel := context.WithTimeout(b, time.Second)
		release, err := s.Acquire(ctx, "work")
		cancel()
		if err != nil {
			t.Fatalf("b's Acquire %d while a waits: %v", i, err)
		}
		defer release()
	}
	if u := s.Usage(); u.Running != 4 || u.PeakOf["a"] != 2 || u.PeakOf["b"] != 2 {
		t.Fatalf("usage %+v, want 4 running, 2 of each", u)
	}
}

// TestSlotsTotal has a third tenant wait for the total when two fill it,
// and start when one gives a slot back.
func TestSlotsTotal(t *testing.T) {
	s := NewSlots(2, 1)
	ra, err := s.Acquire(WithContext(context.Background(), "a"), "work")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(WithContext(context.Background(), "b"), "work"); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(WithContext(context.Background(), "c"), 10*time.Second)
		defer cancel()
		_, err := s.Acquire(ctx, "work")
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("c acquired past the total: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	ra()
	ra() // a second release is a no-op
	if err := <-got; err != nil {
		t.Fatalf("c after a released: %v", err)
	}
	if u := s.Usage(); u.Running != 2 || u.Peak != 2 {
		t.Fatalf("usage %+v, want 2 running, peak 2", u)
	}
}

// TestSlotsShareOnly takes slots of a tenant's share only: they bound the
// tenant, not the total, and wait for none of it.
func TestSlotsShareOnly(t *testing.T) {
	s := NewSlots(1, 1)
	if _, err := s.Acquire(WithContext(context.Background(), "a"), "child"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(WithContext(context.Background(), "b"), time.Second)
	defer cancel()
	release, err := s.AcquireShare(ctx, "in-process")
	if err != nil {
		t.Fatalf("b's share-only slot while a holds the total: %v", err)
	}
	short, cancel2 := context.WithTimeout(WithContext(context.Background(), "b"), 50*time.Millisecond)
	defer cancel2()
	if _, err := s.Acquire(short, "child"); err == nil || !strings.Contains(err.Error(), "tenant b's 1 slots") {
		t.Fatalf("b's second slot: %v, want it to wait for b's share", err)
	}
	release()
	if u := s.Usage(); u.Running != 1 || u.Peak != 1 || u.PeakOf["b"] != 1 {
		t.Fatalf("usage %+v: share-only slots count for the tenant, not the total", u)
	}
}

// TestSlotsTryAcquireShare: a free slot of the tenant's share is always
// taken (never lost to the cancelled wait), a full share refuses at once
// without waiting, another tenant is not affected, and a released slot can
// be taken again.
func TestSlotsTryAcquireShare(t *testing.T) {
	s := NewSlots(8, 2)
	a, b := WithContext(context.Background(), "a"), WithContext(context.Background(), "b")
	var held []func()
	for i := range 100 { // a random choice between ready cases would lose some
		release, ok := s.TryAcquireShare(a)
		if !ok {
			t.Fatalf("try %d: a free slot of tenant a was not taken", i)
		}
		release()
	}
	for range 2 {
		release, ok := s.TryAcquireShare(a)
		if !ok {
			t.Fatal("tenant a could not take its 2 slots")
		}
		held = append(held, release)
	}
	began := time.Now()
	if _, ok := s.TryAcquireShare(a); ok {
		t.Fatal("tenant a took a third slot of a share of 2")
	}
	if d := time.Since(began); d > time.Second {
		t.Fatalf("a full share was refused after %v, want at once", d)
	}
	release, ok := s.TryAcquireShare(b)
	if !ok {
		t.Fatal("tenant b was refused while only tenant a's share is full")
	}
	release()
	held[0]()
	if release, ok := s.TryAcquireShare(a); !ok {
		t.Fatal("tenant a could not take the slot it gave back")
	} else {
		release()
	}
	held[1]()
	if u := s.Usage(); u.PeakOf["a"] != 2 || u.Running != 0 {
		t.Fatalf("usage %+v: want tenant a's peak 2 and no slot of the total held", u)
	}
}

// TestSlotsLend: with Lend, a tenant alone goes beyond its share for
// share-only slots, up to the total less the reserve; another tenant's
// share is still its own; a tenant that waits stops the lending; slots of
// the total are never lent.
func TestSlotsLend(t *testing.T) {
	s := NewSlots(8, 2).Lend(2)
	a, b, c := WithContext(context.Background(), "a"), WithContext(context.Background(), "b"), WithContext(context.Background(), "c")
	var held []func()
	for i := range 6 {
		release, ok := s.TryAcquireShare(a)
		if !ok {
			t.Fatalf("tenant a alone was refused its slot %d of 6 (8 less a reserve of 2)", i+1)
		}
		held = append(held, release)
	}
	if _, ok := s.TryAcquireShare(a); ok {
		t.Fatal("tenant a took a 7th slot: the reserve of 2 was lent too")
	}
	// The reserve is b's: its own share, at once.
	for i := range 2 {
		release, ok := s.TryAcquireShare(b)
		if !ok {
			t.Fatalf("tenant b was refused slot %d of its share while a borrowed", i+1)
		}
		held = append(held, release)
	}
	// b waits for a third; while it does, nobody is lent a slot.
	held[5]() // a: 4 slots, b: 2; so b, at the reserve, cannot borrow
	held[4]()
	waited := make(chan error, 1)
	bWaits, cancelB := context.WithCancel(b)
	go func() {
		release, err := s.AcquireShare(bWaits, "work")
		if err == nil {
			release()
		}
		waited <- err
	}()
	eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.tenants["b"] != nil && s.tenants["b"].waiting == 1
	})
	held[3]() // room to lend again
	if _, ok := s.TryAcquireShare(a); ok {
		t.Fatal("tenant a was lent a slot while tenant b waits for one of its share")
	}
	cancelB()
	if err := <-waited; !errors.Is(err, context.Canceled) {
		t.Fatalf("b's wait: %v", err)
	}
	if release, ok := s.TryAcquireShare(a); !ok {
		t.Fatal("tenant a was not lent the slot it gave back once nobody waits")
	} else {
		held = append(held, release)
	}
	// A third tenant's share is its own, lending or not.
	if release, ok := s.TryAcquireShare(c); !ok {
		t.Fatal("tenant c was refused its share")
	} else {
		release()
	}
	for _, release := range held {
		release()
	}
	if u := s.Usage(); u.PeakOf["a"] != 6 || s.held != 0 || len(s.tenants) != 0 {
		t.Fatalf("usage %+v, held %d, %d shares left: want a's peak 6 and nothing held", u, s.held, len(s.tenants))
	}

	// Slots of the total are never lent.
	total := NewSlots(4, 1).Lend(0)
	if _, err := total.Acquire(a, "child"); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(a, 50*time.Millisecond)
	defer cancel()
	if _, err := total.Acquire(short, "child"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second child of a share of 1: %v, want it to wait", err)
	}
}

// eventually polls cond for up to 5 s.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}
