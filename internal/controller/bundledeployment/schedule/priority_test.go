package schedule

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Drift of a managed object queues its BundleDeployment ahead of what
// waits at the default priority (upgrades, spec changes), and an event
// judged unchanged queues nothing.
func TestDriftGoesFirst(t *testing.T) {
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	for _, tc := range []struct {
		name      string
		unchanged bool
		deleted   bool
		wantFirst string
	}{
		{name: "changed object", wantFirst: "drifted"},
		{name: "deleted object", unchanged: true, deleted: true, wantFirst: "drifted"},
		{name: "an echo of its own write", unchanged: true, wantFirst: "upgrade-0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := priorityqueue.New[reconcile.Request]("drift-" + tc.name)
			defer q.ShutDown()
			s := New(Options{Workers: 1, Unchanged: func(schema.GroupVersionKind, client.Object) bool { return tc.unchanged }})
			s.SetQueue(q)
			for i := range 100 {
				s.Enqueue(fmt.Sprintf("upgrade-%d", i))
			}
			s.ObjectEvent("drifted", cm, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "2"}}, tc.deleted)
			first, _ := q.Get()
			if first.Name != tc.wantFirst {
				t.Errorf("first out of the queue: %s, want %s", first.Name, tc.wantFirst)
			}
		})
	}
}
