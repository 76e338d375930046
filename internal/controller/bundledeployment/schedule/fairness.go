package schedule

import (
	"context"
	"sort"
	"sync"
)

// DefaultTenantReconciles is how many reconciles of one tenant (package
// tenant) run at once unless Options.TenantWorkers is set: a quarter of
// the manager's default 16 workers, so that a tenant whose
// BundleDeployments wait (for hooks that never finish, say) leaves the
// other workers to the others.
const DefaultTenantReconciles = 4

// parked are the BundleDeployments whose reconcile was refused a worker
// because their tenant had all it may have. Each waits, without being
// tried again, until a worker is given back: then the longest waiting of
// that worker's tenant (else of any tenant, in turn) is queued again.
// Polling instead made a thousand queued installs of one tenant cost tens
// of thousands of refused reconciles, each a read, a logger and a timer.
type parked struct {
	mu sync.Mutex
	// names are each tenant's parked BundleDeployments, oldest first.
	names map[string][]string
	// in are the parked BundleDeployments, by name.
	in map[string]bool
	// next is the tenant whose turn it is when the waking tenant has none.
	next int
}

func newParked() *parked { return &parked{names: map[string][]string{}, in: map[string]bool{}} }

// park adds name, of tenant t, unless it is parked already.
func (p *parked) park(t, name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.in[name] {
		return
	}
	p.in[name] = true
	p.names[t] = append(p.names[t], name)
}

// unpark removes name, of tenant t (it got a worker after all).
func (p *parked) unpark(t, name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.in[name] {
		return
	}
	delete(p.in, name)
	q := p.names[t]
	for i, n := range q {
		if n == name {
			p.names[t] = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	if len(p.names[t]) == 0 {
		delete(p.names, t)
	}
}

// wake removes and returns the longest parked BundleDeployment of tenant
// t, else one of another tenant (each in turn); false when none is.
func (p *parked) wake(t string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.names[t]) == 0 {
		tenants := make([]string, 0, len(p.names))
		for other := range p.names {
			tenants = append(tenants, other)
		}
		if len(tenants) == 0 {
			return "", false
		}
		sort.Strings(tenants)
		t = tenants[p.next%len(tenants)]
		p.next++
	}
	q := p.names[t]
	name := q[0]
	if len(q) == 1 {
		delete(p.names, t)
	} else {
		p.names[t] = q[1:]
	}
	delete(p.in, name)
	return name, true
}

// acquireWorker takes a worker for name of tenant t (in ctx), or parks
// name until one is given back. The worker's release wakes the next
// parked BundleDeployment.
func (s *Scheduler) acquireWorker(ctx context.Context, t, name string) (func(), bool) {
	slot, ok := s.workers.TryAcquireShare(ctx)
	if !ok {
		s.parked.park(t, name)
		// A worker given back between the refusal and the park woke no
		// one: try once more, now that it is parked.
		if slot, ok = s.workers.TryAcquireShare(ctx); !ok {
			return nil, false
		}
	}
	// Queued for another reason while parked: no longer waiting.
	s.parked.unpark(t, name)
	return func() {
		slot()
		if next, ok := s.parked.wake(t); ok {
			s.Enqueue(next)
		}
	}, true
}
