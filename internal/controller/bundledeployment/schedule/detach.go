package schedule

import (
	"context"
	"fmt"
	"sync"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rukpak/rukpak/internal/tenant"
)

// Default bounds of the waits that go on without a reconcile worker (see
// detached).
const (
	// DefaultHookWaits is how many BundleDeployments wait for hooks
	// without a worker at once, in all.
	DefaultHookWaits = 256
	// DefaultTenantHookWaits is how many of one tenant do.
	DefaultTenantHookWaits = 32
)

// detached runs the reconciles that wait for a hook without a reconcile
// worker. A reconcile runs on a goroutine of its own, the worker waiting
// for it; when it starts waiting for a hook Job or Pod (it calls Detach),
// it is detached: the worker returns at once (so it, and the tenant's
// share of the workers, go to other BundleDeployments) and the reconcile
// goes on by itself, following the hook's changes until the hook ends or
// its deadline passes. Then it finishes as any reconcile does (applies
// the rest of the revision, writes the status) and puts the
// BundleDeployment back on the queue, with what its result asked for.
//
// While a BundleDeployment's reconcile is detached, its other reconciles
// return at once (Scheduler.Detached): they would race with it, and it
// queues one when it ends. A spec change or a deletion cancels it
// (inFlight), so it ends at once. At most waits wait at once, and a
// tenant's share of them; a wait beyond those occupies its worker, counting
// in its tenant's share of the workers.
//
// A detached wait is in memory only: after a restart, the revision is
// applied again and its hooks run again (before-hook-creation, Helm's
// default, creates them afresh), each with a new deadline.
type detached struct {
	waits *tenant.Slots

	mu  sync.Mutex
	run map[string]bool
}

func newDetached(total, perTenant int) *detached {
	if total < 1 {
		total = DefaultHookWaits
	}
	if perTenant < 1 {
		perTenant = DefaultTenantHookWaits
	}
	return &detached{waits: tenant.NewSlots(total, perTenant), run: map[string]bool{}}
}

// running reports whether a detached reconcile of the BundleDeployment
// name runs.
func (d *detached) running(name string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.run[name]
}

// detacher is one reconcile's way to detach from its worker.
type detacher struct {
	d    *detached
	name string
	// signal is closed once the reconcile detached.
	signal chan struct{}
	// release gives back the wait's place; set once detached.
	release func()
}

type detacherKey struct{}

// Detach lets the reconcile of ctx (a context Run gave its body, or one
// made from it) go on without its worker, if its tenant has room for one
// more wait; it reports whether it did (or had before). Called from the
// reconcile's own goroutine, when it starts waiting for a hook.
func Detach(ctx context.Context) bool {
	dt, _ := ctx.Value(detacherKey{}).(*detacher)
	if dt == nil {
		return false
	}
	if dt.release != nil {
		return true
	}
	release, ok := dt.d.waits.TryAcquireShare(ctx)
	if !ok {
		return false
	}
	dt.release = release
	dt.d.mu.Lock()
	dt.d.run[dt.name] = true
	dt.d.mu.Unlock()
	close(dt.signal)
	return true
}

// outcome is how a reconcile ended.
type outcome struct {
	res ctrl.Result
	err error
}

// runDetachable runs body, the reconcile of the BundleDeployment name, on
// a goroutine of its own. It returns body's result when body ends
// attached; when body detaches (Detach), it returns at once, and body's
// result is handed to the queue when it ends. worker is given back either
// way, as soon as the worker is free.
func (s *Scheduler) runDetachable(ctx context.Context, name string, worker func(), body func(context.Context) (ctrl.Result, error)) (ctrl.Result, error) {
	dt := &detacher{d: s.detached, name: name, signal: make(chan struct{})}
	out := make(chan outcome, 1)
	go func() {
		var o outcome
		defer func() {
			if p := recover(); p != nil {
				// As controller-runtime does for a reconcile: a panic is
				// an error of this BundleDeployment, not the manager's end.
				o = outcome{err: fmt.Errorf("panic: %v [recovered]", p)}
			}
			out <- o
		}()
		o.res, o.err = body(context.WithValue(ctx, detacherKey{}, dt))
	}()
	select {
	case o := <-out:
		worker()
		select {
		case <-dt.signal:
			// It detached, and ended before this select saw it: ended
			// as a detached reconcile, so that its wait's place is
			// given back.
			s.detachedEnded(ctx, dt, o)
			return ctrl.Result{}, nil
		default:
		}
		return o.res, o.err
	case <-dt.signal:
		worker()
		go func() {
			o := <-out
			s.detachedEnded(ctx, dt, o)
		}()
		return ctrl.Result{}, nil
	}
}

// detachedEnded hands the result of a detached reconcile to the queue, as
// controller-runtime would have: an error is logged and retried with the
// queue's backoff (one made only of write conflicts after conflictRetry,
// logged at debug level); otherwise the BundleDeployment is reconciled
// again, at once: for what happened while the detached reconcile ran (its
// other reconciles returned at once), and it asks for the requeue this
// one would have.
func (s *Scheduler) detachedEnded(ctx context.Context, dt *detacher, o outcome) {
	dt.d.mu.Lock()
	delete(dt.d.run, dt.name)
	dt.d.mu.Unlock()
	dt.release()
	if s.queue == nil {
		return
	}
	req := request(dt.name)
	switch {
	case o.err != nil && onlyConflicts(o.err):
		log.FromContext(ctx).V(1).Info("write conflict: reconciling again", "after", conflictRetry, "conflict", o.err.Error())
		s.queue.AddAfter(req, conflictRetry)
	case o.err != nil:
		log.FromContext(ctx).Error(o.err, "Reconciler error (after waiting for a hook)")
		s.queue.AddRateLimited(req)
	default:
		// The reconcile that follows asks for its own requeue.
		s.queue.Forget(req)
		s.queue.Add(req)
	}
}
