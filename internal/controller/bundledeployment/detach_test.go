package bundledeployment

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

// eventually polls cond for up to 5 s.
func eventuallyTrue(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 5s: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// A reconcile that detaches (it waits for a hook) gives its worker back at
// once and goes on by itself; while it runs, the BundleDeployment's other
// reconciles are told so; when it ends, its wait's place is given back and
// the BundleDeployment is queued again. One that never detaches returns
// its own result; one that detaches and ends at once still gives its
// place back; a tenant past its waits holds its worker; a panic is an
// error.
func TestRunDetachable(t *testing.T) {
	newReconciler := func(perTenant int) *Reconciler {
		q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		t.Cleanup(q.ShutDown)
		return &Reconciler{detached: newDetached(8, perTenant), queue: q}
	}
	ctx := tenant.WithContext(context.Background(), "team-a")
	worker := func(n *int) func() { return func() { *n++ } }

	t.Run("attached", func(t *testing.T) {
		r := newReconciler(2)
		var freed int
		res, err := r.runDetachable(ctx, "bd", worker(&freed), func(context.Context) (ctrl.Result, error) {
			return ctrl.Result{RequeueAfter: time.Minute}, errors.New("boom")
		})
		if res.RequeueAfter != time.Minute || err == nil || freed != 1 || r.detached.running("bd") {
			t.Fatalf("result %+v, %v; worker freed %d times; running %v", res, err, freed, r.detached.running("bd"))
		}
	})

	t.Run("detached", func(t *testing.T) {
		r := newReconciler(2)
		var freed int
		hook := make(chan struct{})
		res, err := r.runDetachable(ctx, "bd", worker(&freed), func(ctx context.Context) (ctrl.Result, error) {
			if !detach(ctx) {
				return ctrl.Result{}, errors.New("could not detach")
			}
			<-hook // the hook runs
			return ctrl.Result{}, nil
		})
		if err != nil || res != (ctrl.Result{}) || freed != 1 {
			t.Fatalf("returned %+v, %v with the worker freed %d times; want at once, freed", res, err, freed)
		}
		if !r.detached.running("bd") || r.detached.waits.Usage().Held != 1 {
			t.Fatalf("running %v, waits held %d; want it detached", r.detached.running("bd"), r.detached.waits.Usage().Held)
		}
		close(hook)
		eventuallyTrue(t, "the detached reconcile ends and queues its BundleDeployment", func() bool {
			return !r.detached.running("bd") && r.detached.waits.Usage().Held == 0 && r.queue.Len() == 1
		})
	})

	t.Run("detached and ended at once", func(t *testing.T) {
		r := newReconciler(2)
		for range 50 { // the two ends race: each must give the place back
			var freed int
			if _, err := r.runDetachable(ctx, "bd", worker(&freed), func(ctx context.Context) (ctrl.Result, error) {
				detach(ctx)
				return ctrl.Result{}, nil
			}); err != nil {
				t.Fatal(err)
			}
			eventuallyTrue(t, "the place is given back", func() bool {
				return !r.detached.running("bd") && r.detached.waits.Usage().Held == 0
			})
		}
	})

	t.Run("past the tenant's waits", func(t *testing.T) {
		r := newReconciler(1)
		hook := make(chan struct{})
		defer close(hook)
		var freed int
		if _, err := r.runDetachable(ctx, "first", worker(&freed), func(ctx context.Context) (ctrl.Result, error) {
			detach(ctx)
			<-hook
			return ctrl.Result{}, nil
		}); err != nil {
			t.Fatal(err)
		}
		_, err := r.runDetachable(ctx, "second", worker(&freed), func(ctx context.Context) (ctrl.Result, error) {
			if detach(ctx) {
				return ctrl.Result{}, errors.New("detached past the tenant's one wait")
			}
			return ctrl.Result{}, nil // waited holding its worker
		})
		if err != nil || r.detached.running("second") {
			t.Fatalf("second: %v, running %v", err, r.detached.running("second"))
		}
	})

	t.Run("panic", func(t *testing.T) {
		r := newReconciler(2)
		var freed int
		_, err := r.runDetachable(ctx, "bd", worker(&freed), func(context.Context) (ctrl.Result, error) {
			panic("a bundle that breaks the reconcile")
		})
		if err == nil || !strings.Contains(err.Error(), "panic: a bundle that breaks the reconcile") || freed != 1 {
			t.Fatalf("err %v, worker freed %d times", err, freed)
		}
	})
}
