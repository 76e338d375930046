package schedule

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rukpak/rukpak/internal/tenant"
)

// A reconcile that detaches (it waits for a hook) gives its worker back at
// once and goes on by itself; while it runs, the BundleDeployment's other
// reconciles are told so; when it ends, its wait's place is given back and
// the BundleDeployment is queued again. One that never detaches returns
// its own result; one that detaches and ends at once still gives its
// place back; a tenant past its waits holds its worker; a panic is an
// error.
func TestRunDetachable(t *testing.T) {
	newScheduler := func(perTenant int) *Scheduler {
		q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		t.Cleanup(q.ShutDown)
		return &Scheduler{detached: newDetached(8, perTenant), queue: q}
	}
	// queued waits for the detached reconcile of bd to hand its result to
	// the queue: it gives its wait's place back first.
	queued := func(t *testing.T, s *Scheduler) {
		t.Helper()
		req, shutdown := s.queue.Get()
		if shutdown || req.Name != "bd" {
			t.Fatalf("queued %v (shut down %v), want bd", req, shutdown)
		}
		s.queue.Done(req)
		if s.detached.running("bd") || s.detached.waits.Usage().Held != 0 {
			t.Fatalf("running %v, waits held %d after it ended", s.detached.running("bd"), s.detached.waits.Usage().Held)
		}
	}
	ctx := tenant.WithContext(context.Background(), "team-a")
	worker := func(n *int) func() { return func() { *n++ } }

	t.Run("attached", func(t *testing.T) {
		s := newScheduler(2)
		var freed int
		res, err := s.runDetachable(ctx, "bd", worker(&freed), func(context.Context) (ctrl.Result, error) {
			return ctrl.Result{RequeueAfter: time.Minute}, errors.New("boom")
		})
		if res.RequeueAfter != time.Minute || err == nil || freed != 1 || s.detached.running("bd") {
			t.Fatalf("result %+v, %v; worker freed %d times; running %v", res, err, freed, s.detached.running("bd"))
		}
	})

	t.Run("detached", func(t *testing.T) {
		s := newScheduler(2)
		var freed int
		hook := make(chan struct{})
		res, err := s.runDetachable(ctx, "bd", worker(&freed), func(ctx context.Context) (ctrl.Result, error) {
			if !Detach(ctx) {
				return ctrl.Result{}, errors.New("could not detach")
			}
			<-hook // the hook runs
			return ctrl.Result{}, nil
		})
		if err != nil || res != (ctrl.Result{}) || freed != 1 {
			t.Fatalf("returned %+v, %v with the worker freed %d times; want at once, freed", res, err, freed)
		}
		if !s.Detached("bd") || s.detached.waits.Usage().Held != 1 {
			t.Fatalf("running %v, waits held %d; want it detached", s.Detached("bd"), s.detached.waits.Usage().Held)
		}
		close(hook)
		queued(t, s)
	})

	t.Run("detached and ended at once", func(t *testing.T) {
		s := newScheduler(2)
		for range 50 { // the two ends race: each must give the place back
			var freed int
			if _, err := s.runDetachable(ctx, "bd", worker(&freed), func(ctx context.Context) (ctrl.Result, error) {
				Detach(ctx)
				return ctrl.Result{}, nil
			}); err != nil {
				t.Fatal(err)
			}
			queued(t, s)
		}
	})

	t.Run("past the tenant's waits", func(t *testing.T) {
		s := newScheduler(1)
		hook := make(chan struct{})
		defer close(hook)
		var freed int
		if _, err := s.runDetachable(ctx, "first", worker(&freed), func(ctx context.Context) (ctrl.Result, error) {
			Detach(ctx)
			<-hook
			return ctrl.Result{}, nil
		}); err != nil {
			t.Fatal(err)
		}
		_, err := s.runDetachable(ctx, "second", worker(&freed), func(ctx context.Context) (ctrl.Result, error) {
			if Detach(ctx) {
				return ctrl.Result{}, errors.New("detached past the tenant's one wait")
			}
			return ctrl.Result{}, nil // waited holding its worker
		})
		if err != nil || s.detached.running("second") {
			t.Fatalf("second: %v, running %v", err, s.detached.running("second"))
		}
	})

	t.Run("panic", func(t *testing.T) {
		s := newScheduler(2)
		var freed int
		_, err := s.runDetachable(ctx, "bd", worker(&freed), func(context.Context) (ctrl.Result, error) {
			panic("a bundle that breaks the reconcile")
		})
		if err == nil || !strings.Contains(err.Error(), "panic: a bundle that breaks the reconcile") || freed != 1 {
			t.Fatalf("err %v, worker freed %d times", err, freed)
		}
	})

	t.Run("outside Run", func(t *testing.T) {
		if Detach(ctx) {
			t.Fatal("detached a context Run did not give")
		}
	})
}
