package schedule

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Events of a BundleDeployment's objects are deferred while its reconcile
// runs (the last of each object) and handed back when it ends; others are
// not deferred.
func TestEchoes(t *testing.T) {
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	obj := func(name, rv string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	}
	e := newEchoes()
	if e.deferEvent("app", cm, obj("a", "1"), false) {
		t.Fatal("deferred an event while no reconcile runs")
	}
	e.begin("app")
	for _, ev := range []struct {
		name, rv string
		deleted  bool
	}{{"a", "1", false}, {"a", "2", false}, {"b", "3", true}} {
		if !e.deferEvent("app", cm, obj(ev.name, ev.rv), ev.deleted) {
			t.Fatalf("event of %s not deferred while the reconcile runs", ev.name)
		}
	}
	if e.deferEvent("other", cm, obj("a", "1"), false) {
		t.Fatal("deferred an event of another BundleDeployment")
	}
	// A detached reconcile ending while the next one runs.
	e.begin("app")
	deferred := e.end("app")
	if len(deferred) != 2 || deferred[deferredKey{cm, "ns", "a"}].obj.ResourceVersion != "2" || !deferred[deferredKey{cm, "ns", "b"}].deleted {
		t.Fatalf("deferred = %+v, want the last event of a and b's deletion", deferred)
	}
	if !e.deferEvent("app", cm, obj("c", "4"), false) {
		t.Fatal("not deferred while the next reconcile runs")
	}
	if deferred := e.end("app"); len(deferred) != 1 {
		t.Fatalf("deferred = %+v, want c's event", deferred)
	}
	if e.deferEvent("app", cm, obj("a", "5"), false) {
		t.Fatal("deferred an event after every reconcile ended")
	}
}
