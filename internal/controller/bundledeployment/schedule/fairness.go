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
//
// A BundleDeployment parked for drift of its objects is urgent: it is
// woken before its tenant's others, which may be a thousand upgrades.
type parked struct {
	mu sync.Mutex
	// urgent and names are each tenant's parked BundleDeployments, oldest
	// first: those queued for drift, and the others.
	urgent, names map[string][]string
	// in are the parked BundleDeployments, by name: true when urgent.
	in map[string]bool
	// next is the tenant whose turn it is when the waking tenant has none.
	next int
}

func newParked() *parked {
	return &parked{urgent: map[string][]string{}, names: map[string][]string{}, in: map[string]bool{}}
}

// park adds name, of tenant t, unless it is parked already; parked and
// now urgent, it moves ahead of its tenant's others.
func (p *parked) park(t, name string, urgent bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	wasUrgent, in := p.in[name]
	switch {
	case !in:
	case urgent && !wasUrgent:
		remove(p.names, t, name)
	default:
		return
	}
	p.in[name] = urgent
	if urgent {
		p.urgent[t] = append(p.urgent[t], name)
	} else {
		p.names[t] = append(p.names[t], name)
	}
}

// unpark removes name, of tenant t (it got a worker after all).
func (p *parked) unpark(t, name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	urgent, in := p.in[name]
	if !in {
		return
	}
	delete(p.in, name)
	if urgent {
		remove(p.urgent, t, name)
	} else {
		remove(p.names, t, name)
	}
}

// remove takes name out of tenant t's list in lists.
func remove(lists map[string][]string, t, name string) {
	q := lists[t]
	for i, n := range q {
		if n == name {
			lists[t] = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	if len(lists[t]) == 0 {
		delete(lists, t)
	}
}

// wake removes and returns the longest parked BundleDeployment of tenant
// t, urgent ones first, else one of another tenant (each in turn, urgent
// ones first); false when none is.
func (p *parked) wake(t string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.urgent[t]) == 0 && len(p.names[t]) == 0 {
		tenants := make([]string, 0, len(p.urgent)+len(p.names))
		for other := range p.urgent {
			tenants = append(tenants, other)
		}
		for other := range p.names {
			if len(p.urgent[other]) == 0 {
				tenants = append(tenants, other)
			}
		}
		if len(tenants) == 0 {
			return "", false
		}
		sort.Strings(tenants)
		t = tenants[p.next%len(tenants)]
		p.next++
	}
	lists := p.names
	if len(p.urgent[t]) > 0 {
		lists = p.urgent
	}
	q := lists[t]
	name := q[0]
	if len(q) == 1 {
		delete(lists, t)
	} else {
		lists[t] = q[1:]
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
		s.parked.park(t, name, s.drifted.has(name))
		// A worker given back between the refusal and the park woke no
		// one: try once more, now that it is parked.
		if slot, ok = s.workers.TryAcquireShare(ctx); !ok {
			return nil, false
		}
	}
	// Queued for another reason while parked: no longer waiting. The turn
	// that starts now sees any drift so far.
	s.parked.unpark(t, name)
	s.drifted.drop(name)
	return func() {
		slot()
		if next, ok := s.parked.wake(t); ok {
			s.requeue(next)
		}
	}, true
}
