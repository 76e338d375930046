package schedule

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/tenant"
)

// newTestScheduler is a Scheduler with one worker per tenant, two in all,
// a queue, and unchanged judging every event of an object.
func newTestScheduler(t *testing.T, unchanged func(schema.GroupVersionKind, client.Object) bool) *Scheduler {
	t.Helper()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(q.ShutDown)
	s := New(Options{Workers: 2, TenantWorkers: 1, Unchanged: unchanged})
	s.SetQueue(q)
	return s
}

// bundleDeployment is a BundleDeployment named name of tenant team.
func bundleDeployment(name, team string) *v1alpha2.BundleDeployment {
	return &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1},
		Spec: v1alpha2.BundleDeploymentSpec{
			InstallNamespace: team,
			ServiceAccount:   &v1alpha2.ServiceAccountReference{Name: "installer"},
		},
	}
}

// next is the name of the BundleDeployment queued next (it waits for one).
func next(t *testing.T, s *Scheduler) string {
	t.Helper()
	req, shutdown := s.queue.Get()
	if shutdown {
		t.Fatal("the queue was shut down")
	}
	s.queue.Done(req)
	return req.Name
}

// Run gives body its BundleDeployment's tenant; a reconcile refused a
// worker of its tenant is parked, and queued again when the worker is
// given back; a deletion takes no worker; an error made only of write
// conflicts is a short requeue.
func TestRun(t *testing.T) {
	s := newTestScheduler(t, nil)
	ctx := context.Background()

	holding, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, err := s.Run(ctx, bundleDeployment("a", "team"), func(ctx context.Context, bd *v1alpha2.BundleDeployment) (ctrl.Result, error) {
			if got := tenant.From(ctx); got != "team" {
				return ctrl.Result{}, errors.New("body's tenant is " + got)
			}
			close(holding)
			<-release
			return ctrl.Result{}, nil
		})
		first <- err
	}()
	<-holding

	ran := false
	body := func(context.Context, *v1alpha2.BundleDeployment) (ctrl.Result, error) {
		ran = true
		return ctrl.Result{}, nil
	}
	if res, err := s.Run(ctx, bundleDeployment("b", "team"), body); ran || err != nil || res != (ctrl.Result{}) {
		t.Fatalf("b of the same tenant: ran %v, %+v, %v; want it parked", ran, res, err)
	}
	deleting := bundleDeployment("c", "team")
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	if _, err := s.Run(ctx, deleting, body); !ran || err != nil {
		t.Fatalf("a deletion: ran %v, %v; want it run without a worker", ran, err)
	}
	ran = false
	if _, err := s.Run(ctx, bundleDeployment("d", "other"), body); !ran || err != nil {
		t.Fatalf("another tenant: ran %v, %v; want it run on the other worker", ran, err)
	}

	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if got := next(t, s); got != "b" {
		t.Fatalf("queued %q when the worker was given back, want the parked b", got)
	}

	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("changed"))
	res, err := s.Run(ctx, bundleDeployment("b", "team"), func(context.Context, *v1alpha2.BundleDeployment) (ctrl.Result, error) {
		return ctrl.Result{}, errors.Join(conflict, conflict)
	})
	if err != nil || res.RequeueAfter != conflictRetry {
		t.Fatalf("conflicts: %+v, %v; want a requeue after %s", res, err, conflictRetry)
	}
}
