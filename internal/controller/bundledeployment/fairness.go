package bundledeployment

import (
	"context"
	"sync"
	"time"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// DefaultTenantReconciles is how many reconciles of one tenant (package
// tenant) run at once unless Reconciler.TenantReconciles is set: a
// quarter of the manager's default 16 workers, so that a tenant whose
// BundleDeployments wait (for hooks that never finish, say) leaves the
// other workers to the others.
const DefaultTenantReconciles = 4

// tenantRetry is when a reconcile refused a worker because its tenant has
// all it may have is tried again.
const tenantRetry = 250 * time.Millisecond

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
