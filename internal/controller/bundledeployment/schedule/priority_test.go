package schedule

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rukpak/rukpak/internal/tenant"
)

// Drift of a managed object queues its BundleDeployment ahead of what
// waits at the default priority (upgrades, spec changes), and an event
// judged unchanged queues nothing. An object its owner never applied
// (labelled by someone else) queues it behind what waits, not urgent.
func TestDriftGoesFirst(t *testing.T) {
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	for _, tc := range []struct {
		name       string
		unchanged  bool
		deleted    bool
		notApplied bool
		wantFirst  string
	}{
		{name: "changed object", wantFirst: "drifted"},
		{name: "deleted object", unchanged: true, deleted: true, wantFirst: "drifted"},
		{name: "an echo of its own write", unchanged: true, wantFirst: "upgrade-0"},
		{name: "an object its owner never applied", notApplied: true, wantFirst: "upgrade-0"},
		{name: "a deleted object its owner never applied", unchanged: true, deleted: true, notApplied: true, wantFirst: "upgrade-0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := priorityqueue.New[reconcile.Request]("drift-" + tc.name)
			defer q.ShutDown()
			s := New(Options{Workers: 1,
				Unchanged: func(schema.GroupVersionKind, client.Object) bool { return tc.unchanged },
				Applied:   func(schema.GroupVersionKind, client.Object) bool { return !tc.notApplied }})
			s.SetQueue(q)
			for i := range 100 {
				s.Enqueue(fmt.Sprintf("upgrade-%d", i))
			}
			s.ObjectEvent("drifted", cm, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "2"}}, tc.deleted)
			first, _ := q.Get()
			if first.Name != tc.wantFirst {
				t.Errorf("first out of the queue: %s, want %s", first.Name, tc.wantFirst)
			}
			if tc.notApplied && s.drifted.has("drifted") {
				t.Error("urgent for an object its owner never applied")
			}
		})
	}
}

// A BundleDeployment queued for drift while its tenant has all its
// workers is parked ahead of the tenant's waiting upgrades, and queued
// again at DriftPriority when a worker is given back; once its turn has a
// worker it is no longer urgent.
func TestDriftedParkedGoesFirst(t *testing.T) {
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	q := priorityqueue.New[reconcile.Request]("drift-parked")
	defer q.ShutDown()
	s := New(Options{Workers: 1, TenantWorkers: 1, Unchanged: func(schema.GroupVersionKind, client.Object) bool { return false }})
	s.SetQueue(q)
	ctx := tenant.WithContext(context.Background(), "team")

	release, ok := s.acquireWorker(ctx, "team", "running")
	if !ok {
		t.Fatal("the only worker refused")
	}
	for i := range 100 {
		if _, ok := s.acquireWorker(ctx, "team", fmt.Sprintf("upgrade-%d", i)); ok {
			t.Fatalf("upgrade-%d given a second worker", i)
		}
	}
	s.Enqueue("spec-change")
	s.ObjectEvent("drifted", cm, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "2"}}, false)
	if got := getName(t, q); got != "drifted" {
		t.Fatalf("first out of the queue: %s, want drifted", got)
	}
	if _, ok := s.acquireWorker(ctx, "team", "drifted"); ok {
		t.Fatal("drifted given a second worker")
	}
	q.Done(request("drifted"))

	release()
	if got := getName(t, q); got != "drifted" {
		t.Fatalf("after a worker was given back, first out of the queue: %s, want drifted (ahead of 100 parked upgrades and a queued spec change)", got)
	}
	q.Done(request("drifted"))
	release, ok = s.acquireWorker(ctx, "team", "drifted")
	if !ok {
		t.Fatal("drifted refused the worker given back")
	}
	if s.drifted.has("drifted") {
		t.Error("drifted still urgent once its turn has a worker")
	}
	release()
	// The spec change was queued before upgrade-0 was woken, both at the
	// default priority.
	for _, want := range []string{"spec-change", "upgrade-0"} {
		if got := getName(t, q); got != want {
			t.Fatalf("next out of the queue: %s, want %s", got, want)
		}
	}
}

// getName takes the next request out of q, failing t when none comes
// within a second.
func getName(t *testing.T, q priorityqueue.PriorityQueue[reconcile.Request]) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		r, _ := q.Get()
		got <- r.Name
	}()
	select {
	case name := <-got:
		return name
	case <-time.After(time.Second):
		t.Fatal("nothing queued")
		return ""
	}
}
