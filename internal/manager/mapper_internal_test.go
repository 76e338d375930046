package manager

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// countingMapper is a RESTMapper that serves what it was given and counts
// the RESTMapping questions it answers.
type countingMapper struct {
	meta.RESTMapper
	asked int
}

func (c *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	c.asked++
	return c.RESTMapper.RESTMapping(gk, versions...)
}

// TestRememberingMapperAnswersAsItsMapper: a mapping is answered again
// without asking the mapper only while nothing else was asked of it; what
// the mapper does not know is always asked; callers get their own copy.
func TestRememberingMapperAnswersAsItsMapper(t *testing.T) {
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	widget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	def := meta.NewDefaultRESTMapper(nil)
	def.Add(cm, meta.RESTScopeNamespace)
	inner := &countingMapper{RESTMapper: def}
	m := newRememberingMapper(inner)

	ask := func(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
		t.Helper()
		return m.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	first, err := ask(cm)
	if err != nil {
		t.Fatal(err)
	}
	first.Resource.Resource = "changed by the caller"
	again, err := ask(cm)
	if err != nil {
		t.Fatal(err)
	}
	if inner.asked != 1 || again.Resource.Resource != "configmaps" || again.Scope.Name() != meta.RESTScopeNameNamespace {
		t.Fatalf("asked %d times, mapping %+v; want 1 and configmaps, namespaced", inner.asked, again)
	}

	// Unknown: asked each time, and what was kept is forgotten, as the
	// mapper may have loaded discovery again.
	for range 2 {
		if _, err := ask(widget); !meta.IsNoMatchError(err) {
			t.Fatalf("Widget: %v, want no match", err)
		}
	}
	if inner.asked != 3 {
		t.Fatalf("asked %d times, want 3", inner.asked)
	}
	def.Add(widget, meta.RESTScopeRoot)
	if w, err := ask(widget); err != nil || w.Scope.Name() != meta.RESTScopeNameRoot {
		t.Fatalf("Widget: %v, %v; want cluster-scoped", w, err)
	}
	if _, err := ask(cm); err != nil || inner.asked != 5 {
		t.Fatalf("ConfigMap after Widget: %v, asked %d times; want asked again (5)", err, inner.asked)
	}

	// Any other question is passed on and forgets too.
	if _, err := m.KindFor(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ask(cm); err != nil || inner.asked != 6 {
		t.Fatalf("ConfigMap after KindFor: %v, asked %d times; want 6", err, inner.asked)
	}
	if _, err := ask(cm); err != nil || inner.asked != 6 {
		t.Fatalf("ConfigMap again: %v, asked %d times; want 6", err, inner.asked)
	}
}
