package schedule

import (
	"context"
	"sync"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// Turn is one reconcile of one BundleDeployment, from Begin to End.
type Turn struct {
	s    *Scheduler
	name string
	fl   *flight
	// done unregisters the flight and cancels the turn's context.
	done func()
}

// Begin starts the turn of bd's reconcile, on the goroutine Run gave it:
// the context it returns is cancelled when bd is superseded (a spec
// change, a deletion: see Observe), so that a reconcile waiting for a hook
// stops at once and the next one works on what bd is now; and the events
// of bd's managed objects are deferred (ObjectEvent) until the turn ends. The
// caller must call End, however the reconcile ends.
func (s *Scheduler) Begin(ctx context.Context, bd *v1alpha2.BundleDeployment) (context.Context, *Turn) {
	ctx, fl, done := s.flights.start(ctx, bd)
	s.echoes.begin(bd.Name)
	return ctx, &Turn{s: s, name: bd.Name, fl: fl, done: done}
}

// Superseded reports whether the BundleDeployment changed (a new
// generation) or is being deleted since the turn began: what the
// reconcile found is about a spec, or a life, that is gone.
func (t *Turn) Superseded() bool { return t.s.flights.superseded(t.fl) }

// End ends the turn, in this order, and returns the reconcile's result:
//
//  1. a superseded reconcile is queued again, at once, for what the
//     BundleDeployment is now, and ends with neither error nor requeue;
//     otherwise result and err are returned as they are;
//  2. the events of its managed objects deferred while it ran are judged:
//     the BundleDeployment is queued again when one is drift (a
//     deletion, or a change Options.Unchanged does not find unchanged),
//     not when all are echoes of its own writes — so the reconcile must
//     have recorded what it applied before End;
//  3. the turn's context is cancelled.
func (t *Turn) End(result ctrl.Result, err error) (ctrl.Result, error) {
	if t.Superseded() {
		t.s.Enqueue(t.name)
		result, err = ctrl.Result{}, nil
	}
	t.s.judgeDeferred(t.name)
	t.done()
	return result, err
}

// inFlight cancels the turn of a BundleDeployment that is no longer what
// it was when the turn began: its spec changed (a new generation) or it
// is being deleted. A reconcile waiting for a hook then stops at once
// instead of occupying its worker until the hook's deadline, and the next
// reconcile works on what the BundleDeployment is now.
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

// start registers bd's turn; the context it returns is cancelled when bd
// is superseded (see supersede); done unregisters it.
func (f *inFlight) start(ctx context.Context, bd *v1alpha2.BundleDeployment) (_ context.Context, _ *flight, done func()) {
	ctx, cancel := context.WithCancel(ctx)
	fl := &flight{generation: bd.Generation, deleting: !bd.DeletionTimestamp.IsZero(), cancel: cancel}
	f.mu.Lock()
	f.m[bd.Name] = fl
	f.mu.Unlock()
	return ctx, fl, func() {
		f.mu.Lock()
		if f.m[bd.Name] == fl {
			delete(f.m, bd.Name)
		}
		f.mu.Unlock()
		cancel()
	}
}

// superseded reports whether fl was superseded.
func (f *inFlight) superseded(fl *flight) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fl.superseded
}

// supersede cancels the running turn of bd if bd changed since it began:
// a newer generation, or a deletion the turn did not know of. An event
// of an older generation is not a change: the informer's handlers are
// told of updates after its cache holds them, each at its own pace, so a
// turn that began on the newest version can still hear of an older one
// (cancelled for it, the turn's apply would stop half-way with nothing
// newer to take over).
func (f *inFlight) supersede(bd *v1alpha2.BundleDeployment) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl := f.m[bd.Name]
	if fl == nil {
		return
	}
	newer := bd.Generation > fl.generation
	deleted := !fl.deleting && !bd.DeletionTimestamp.IsZero()
	if !newer && !deleted {
		return
	}
	fl.superseded = true
	fl.cancel()
}
