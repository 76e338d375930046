package schedule

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Events of a BundleDeployment's objects are held while its reconcile
// runs (the last of each object) and handed back when it ends; others are
// not held.
func TestEchoes(t *testing.T) {
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	obj := func(name, rv string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	}
	e := newEchoes()
	if e.hold("app", cm, obj("a", "1"), false) {
		t.Fatal("held an event while no reconcile runs")
	}
	e.begin("app")
	for _, ev := range []struct {
		name, rv string
		deleted  bool
	}{{"a", "1", false}, {"a", "2", false}, {"b", "3", true}} {
		if !e.hold("app", cm, obj(ev.name, ev.rv), ev.deleted) {
			t.Fatalf("event of %s not held while the reconcile runs", ev.name)
		}
	}
	if e.hold("other", cm, obj("a", "1"), false) {
		t.Fatal("held an event of another BundleDeployment")
	}
	// A detached reconcile ending while the next one runs.
	e.begin("app")
	held := e.end("app")
	if len(held) != 2 || held[heldKey{cm, "ns", "a"}].obj.ResourceVersion != "2" || !held[heldKey{cm, "ns", "b"}].deleted {
		t.Fatalf("held = %+v, want the last event of a and b's deletion", held)
	}
	if !e.hold("app", cm, obj("c", "4"), false) {
		t.Fatal("not held while the next reconcile runs")
	}
	if held := e.end("app"); len(held) != 1 {
		t.Fatalf("held = %+v, want c's event", held)
	}
	if e.hold("app", cm, obj("a", "5"), false) {
		t.Fatal("held an event after every reconcile ended")
	}
}
