package schedule

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// A turn is superseded, and its context cancelled, by a new generation
// or a deletion of its BundleDeployment, not by a status update nor by a
// late event of an older generation; a
// superseded turn ends without error and queues its BundleDeployment
// again; any turn's end cancels its context.
func TestTurn(t *testing.T) {
	boom := errors.New("boom")
	for _, tt := range []struct {
		name       string
		begin      func(bd *v1alpha2.BundleDeployment)
		change     func(bd *v1alpha2.BundleDeployment)
		superseded bool
	}{
		{name: "a status update", change: func(bd *v1alpha2.BundleDeployment) { bd.ResourceVersion = "2" }},
		{name: "a new generation", change: func(bd *v1alpha2.BundleDeployment) { bd.Generation++ }, superseded: true},
		{name: "a deletion", change: func(bd *v1alpha2.BundleDeployment) { bd.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)} }, superseded: true},
		// The informer tells its handlers of an update after its cache
		// holds it: a turn begun on generation 2 can hear of 1 late.
		{name: "a late event of an older generation", change: func(bd *v1alpha2.BundleDeployment) { bd.Generation--; bd.ResourceVersion = "1" }},
		{name: "a late event of an older generation, not being deleted, during a deletion's turn", begin: func(bd *v1alpha2.BundleDeployment) {
			bd.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
		}, change: func(bd *v1alpha2.BundleDeployment) { bd.Generation--; bd.DeletionTimestamp = nil }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestScheduler(t, nil)
			bd := bundleDeployment("app", "team")
			bd.Generation = 2
			if tt.begin != nil {
				tt.begin(bd)
			}
			ctx, turn := s.Begin(context.Background(), bd)
			changed := bd.DeepCopy()
			tt.change(changed)
			s.Observe(changed)
			if turn.Superseded() != tt.superseded || (ctx.Err() != nil) != tt.superseded {
				t.Fatalf("superseded %v, context %v; want superseded %v", turn.Superseded(), ctx.Err(), tt.superseded)
			}
			res, err := turn.End(ctrl.Result{RequeueAfter: time.Minute}, boom)
			if ctx.Err() == nil {
				t.Fatal("the context outlived the turn")
			}
			if !tt.superseded {
				if res.RequeueAfter != time.Minute || !errors.Is(err, boom) || s.queue.Len() != 0 {
					t.Fatalf("= %+v, %v, %d queued; want the reconcile's own result", res, err, s.queue.Len())
				}
				return
			}
			if res != (ctrl.Result{}) || err != nil || next(t, s) != "app" {
				t.Fatalf("= %+v, %v; want no error and the BundleDeployment queued again", res, err)
			}
		})
	}
}

// Events of a BundleDeployment's objects that arrive during its turn are
// judged when it ends: echoes of its own writes queue nothing, a drift or
// a deletion queues it once. Outside a turn, an event is judged at once.
func TestObjectEvent(t *testing.T) {
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	obj := func(name, rv string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	}
	// Version "echo" is the controller's own write; any other is drift.
	s := newTestScheduler(t, func(_ schema.GroupVersionKind, o client.Object) bool { return o.GetResourceVersion() == "echo" })
	bd := bundleDeployment("app", "team")

	_, turn := s.Begin(context.Background(), bd)
	s.ObjectEvent("app", cm, obj("a", "echo"), false)
	s.ObjectEvent("app", cm, obj("b", "echo"), false)
	if s.queue.Len() != 0 {
		t.Fatal("an event was judged during the turn")
	}
	if _, err := turn.End(ctrl.Result{}, nil); err != nil {
		t.Fatal(err)
	}
	if s.queue.Len() != 0 {
		t.Fatal("echoes queued the BundleDeployment")
	}

	for _, ev := range []struct {
		name, rv string
		deleted  bool
	}{{"drifted", "7", false}, {"deleted", "echo", true}} {
		_, turn = s.Begin(context.Background(), bd)
		s.ObjectEvent("app", cm, obj("a", "echo"), false)
		s.ObjectEvent("app", cm, obj("b", ev.rv), ev.deleted)
		if s.queue.Len() != 0 {
			t.Fatalf("%s: judged during the turn", ev.name)
		}
		if _, err := turn.End(ctrl.Result{}, nil); err != nil {
			t.Fatal(err)
		}
		if got := next(t, s); got != "app" || s.queue.Len() != 0 {
			t.Fatalf("%s: queued %q (%d more), want app once", ev.name, got, s.queue.Len())
		}
	}

	s.ObjectEvent("app", cm, obj("a", "echo"), false)
	if s.queue.Len() != 0 {
		t.Fatal("an echo outside a turn queued the BundleDeployment")
	}
	s.ObjectEvent("app", cm, obj("a", "8"), false)
	if got := next(t, s); got != "app" {
		t.Fatalf("drift outside a turn queued %q, want app", got)
	}
}
