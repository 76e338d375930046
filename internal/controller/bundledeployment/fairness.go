package bundledeployment

import (
	"context"
	"sort"
	"sync"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// DefaultTenantReconciles is how many reconciles of one tenant (package
// tenant) run at once unless Reconciler.TenantReconciles is set: a
// quarter of the manager's default 16 workers, so that a tenant whose
// BundleDeployments wait (for hooks that never finish, say) leaves the
// other workers to the others.
const DefaultTenantReconciles = 4

// parked are the BundleDeployments whose reconcile was refused a worker
// because their tenant had all it may have. Each waits, without being
// tried again, until a worker is given back: then the longest waiting of
// that worker's tenant (else of any tenant, in turn) is queued again.
// Polling instead (every 250 ms, as before) made a thousand queued
// installs of one tenant cost tens of thousands of refused reconciles,
// each a read, a logger and a timer.
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
func (r *Reconciler) acquireWorker(ctx context.Context, t, name string) (func(), bool) {
	slot, ok := r.workers.TryAcquireShare(ctx)
	if !ok {
		r.parked.park(t, name)
		// A worker given back between the refusal and the park woke no
		// one: try once more, now that it is parked.
		if slot, ok = r.workers.TryAcquireShare(ctx); !ok {
			return nil, false
		}
	}
	// Queued for another reason while parked: no longer waiting.
	r.parked.unpark(t, name)
	return func() {
		slot()
		if next, ok := r.parked.wake(t); ok {
			r.enqueue(next)
		}
	}, true
}

// inFlight cancels the reconcile of a BundleDeployment that is no longer
// what it was when the reconcile began: its spec changed (a new
// generation) or it is being deleted. A reconcile waiting for a hook then
// stops at once instead of holding its worker until the hook's deadline,
// and the next reconcile works on what the BundleDeployment is now.
type inFlight struct {
	mu sync.Mutex
	m  map[string]*flight
}

type flight struct {
	generation int64
	deleting   bool
	cancel     context.CancelFunc
	superseded bool
}

func newInFlight() *inFlight { return &inFlight{m: map[string]*flight{}} }

// start registers bd's reconcile; the context it returns is cancelled
// when bd is superseded (see supersede). superseded tells whether it was;
// done unregisters it.
func (f *inFlight) start(ctx context.Context, bd *v1alpha2.BundleDeployment) (_ context.Context, superseded func() bool, done func()) {
	ctx, cancel := context.WithCancel(ctx)
	fl := &flight{generation: bd.Generation, deleting: !bd.DeletionTimestamp.IsZero(), cancel: cancel}
	f.mu.Lock()
	f.m[bd.Name] = fl
	f.mu.Unlock()
	superseded = func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return fl.superseded
	}
	return ctx, superseded, func() {
		f.mu.Lock()
		if f.m[bd.Name] == fl {
			delete(f.m, bd.Name)
		}
		f.mu.Unlock()
		cancel()
	}
}

// supersede cancels the running reconcile of bd if bd changed since it
// began (a new generation) or is being deleted.
func (f *inFlight) supersede(bd *v1alpha2.BundleDeployment) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl := f.m[bd.Name]
	if fl == nil || bd.Generation == fl.generation && (fl.deleting || bd.DeletionTimestamp.IsZero()) {
		return
	}
	fl.superseded = true
	fl.cancel()
}
