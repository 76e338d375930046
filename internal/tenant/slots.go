package tenant

import (
	"context"
	"fmt"
	"sync"
)

// Slots bounds how much work runs at once: at most Total in all and at
// most PerTenant of one tenant. A tenant waits for a slot of its own share
// first, holding nothing, and only then for one of the total, so a tenant
// that has used up its share never keeps another tenant waiting; waiters
// are served in the order they came. It is safe for concurrent use.
type Slots struct {
	total, perTenant int
	all              chan struct{}

	// lend is set when share-only slots are lent beyond a full share
	// (Lend); reserve is how many of the total stay unheld.
	lend    bool
	reserve int

	mu      sync.Mutex
	tenants map[string]*share
	running int
	peak    int
	peakOf  map[string]int
	// held is how many slots every tenant holds, of any kind (lent ones
	// too).
	held int
}

// share is one tenant's part of the slots.
type share struct {
	slots chan struct{}
	// users are the holders and waiters; the share is dropped at 0.
	users   int
	running int
	// waiting is how many of the tenant's acquires wait for a slot.
	waiting int
}

// NewSlots returns slots for total at once, perTenant of one tenant.
// total < 1 is 1; perTenant < 1 or over total is total.
func NewSlots(total, perTenant int) *Slots {
	total = max(total, 1)
	if perTenant < 1 || perTenant > total {
		perTenant = total
	}
	return &Slots{total: total, perTenant: perTenant, all: make(chan struct{}, total),
		tenants: map[string]*share{}, peakOf: map[string]int{}}
}

// Lend makes s work-conserving for share-only slots (AcquireShare,
// TryAcquireShare): a tenant whose share is full may still take one while
// no other tenant waits for a slot of its share and at least reserve of
// the total stay unheld by anyone; it then holds more than its share, at
// most the total less reserve. Slots of the total (Acquire: child
// processes, fetches) are never lent. It returns s.
//
// So one tenant alone on a manager is not held to its share, and a tenant
// that comes along finds reserve slots free and, once it waits, stops the
// lending: what was lent comes back as the borrower's work ends.
func (s *Slots) Lend(reserve int) *Slots {
	s.lend, s.reserve = true, max(reserve, 0)
	return s
}

// Total returns how many slots there are in all.
func (s *Slots) Total() int { return s.total }

// PerTenant returns how many slots one tenant may hold at once.
func (s *Slots) PerTenant() int { return s.perTenant }

// Acquire waits for a slot for the tenant ctx carries (From) and returns
// the function that gives it back, or ctx's error, wrapped, saying what
// waited.
func (s *Slots) Acquire(ctx context.Context, what string) (release func(), err error) {
	return s.acquire(ctx, what, true)
}

// AcquireShare waits for a slot of the tenant's share only, not one of the
// total: for light work that must be bounded per tenant but must not wait
// behind other tenants' heavy work. It counts in the tenant's peak, not in
// the total's.
func (s *Slots) AcquireShare(ctx context.Context, what string) (release func(), err error) {
	return s.acquire(ctx, what, false)
}

// TryAcquireShare takes a slot of the share of the tenant ctx carries if
// one is free now, without waiting: for work that must not hold anything
// while it waits (a reconcile worker), and is tried again later instead.
// It counts in the tenant's peak, not in the total's.
func (s *Slots) TryAcquireShare(ctx context.Context) (release func(), ok bool) {
	ctx, cancel := context.WithCancel(ctx)
	cancel() // a slot free now is taken (acquire tries that first); none is waited for
	release, err := s.acquire(ctx, "a reconcile", false)
	return release, err == nil
}

func (s *Slots) acquire(ctx context.Context, what string, total bool) (release func(), err error) {
	t := From(ctx)
	s.mu.Lock()
	sh := s.tenants[t]
	if sh == nil {
		sh = &share{slots: make(chan struct{}, s.perTenant)}
		s.tenants[t] = sh
	}
	sh.users++
	if !total && s.lendable(t, sh) {
		return s.lent(t, sh), nil
	}
	s.mu.Unlock()
	leave := func() {
		s.mu.Lock()
		if sh.users--; sh.users == 0 {
			delete(s.tenants, t)
		}
		s.mu.Unlock()
	}
	select {
	case sh.slots <- struct{}{}: // free now: taken even if ctx is done (TryAcquireShare)
	default:
		// Marked as waiting, so that no other tenant is lent a slot
		// meanwhile (a TryAcquireShare, whose ctx is done, waits not).
		marked := ctx.Err() == nil
		s.markWaiting(sh, marked, 1)
		select {
		case sh.slots <- struct{}{}:
			s.markWaiting(sh, marked, -1)
		case <-ctx.Done():
			s.markWaiting(sh, marked, -1)
			leave()
			return nil, fmt.Errorf("waiting for one of tenant %s's %d slots to start %s: %w", t, s.perTenant, what, ctx.Err())
		}
	}
	if total {
		select {
		case s.all <- struct{}{}:
		case <-ctx.Done():
			<-sh.slots
			leave()
			return nil, fmt.Errorf("waiting for one of the %d slots to start %s: %w", s.total, what, ctx.Err())
		}
	}
	s.mu.Lock()
	if total {
		s.running++
		s.peak = max(s.peak, s.running)
	}
	sh.running++
	s.held++
	s.peakOf[t] = max(s.peakOf[t], sh.running)
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			if total {
				s.running--
			}
			sh.running--
			s.held--
			s.mu.Unlock()
			if total {
				<-s.all
			}
			<-sh.slots
			leave()
		})
	}, nil
}

// markWaiting adds n to sh's waiting acquires when marked.
func (s *Slots) markWaiting(sh *share, marked bool, n int) {
	if !marked {
		return
	}
	s.mu.Lock()
	sh.waiting += n
	s.mu.Unlock()
}

// lendable reports whether tenant t, whose share sh may be full, takes a
// lent slot: s lends, sh is full, no other tenant waits, and reserve
// slots of the total stay unheld after it. s.mu is held.
func (s *Slots) lendable(t string, sh *share) bool {
	if !s.lend || len(sh.slots) < cap(sh.slots) || s.held+1 > s.total-s.reserve {
		return false
	}
	for other, o := range s.tenants {
		if other != t && o.waiting > 0 {
			return false
		}
	}
	return true
}

// lent takes a lent slot for t (see Lend) and unlocks s.mu; it returns the
// function that gives it back.
func (s *Slots) lent(t string, sh *share) func() {
	sh.running++
	s.held++
	s.peakOf[t] = max(s.peakOf[t], sh.running)
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			sh.running--
			s.held--
			if sh.users--; sh.users == 0 {
				delete(s.tenants, t)
			}
		})
	}
}

// Usage is what Slots saw.
type Usage struct {
	// Running is how many slots of the total are held now.
	Running int
	// Held is how many slots are held now, of any kind (share-only and
	// lent ones too).
	Held int
	// Peak is the most slots held at once since the last ResetPeak.
	Peak int
	// PeakOf is, by tenant, the most slots it held at once.
	PeakOf map[string]int
}

// Usage returns how many slots are held now and the peaks.
func (s *Slots) Usage() Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := Usage{Running: s.running, Held: s.held, Peak: s.peak, PeakOf: make(map[string]int, len(s.peakOf))}
	for t, n := range s.peakOf {
		u.PeakOf[t] = n
	}
	return u
}

// ResetPeak forgets the peaks: they start again from what runs now.
func (s *Slots) ResetPeak() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.peak = s.running
	s.peakOf = map[string]int{}
	for t, sh := range s.tenants {
		if sh.running > 0 {
			s.peakOf[t] = sh.running
		}
	}
}
