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
	m := newRememberingMapper(inner, nil)

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

// TestRememberingMapperInvalidate: a mapping the RESTMapper knows is
// answered as long as it is not invalidated, even once the cluster stops
// serving the kind (the dynamic mapper never forgets a kind); Invalidate
// forgets the kept mappings and the RESTMapper, and the next question is
// asked of a new one, which knows what the cluster serves then.
func TestRememberingMapperInvalidate(t *testing.T) {
	widget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	served := func(kinds ...schema.GroupVersionKind) *countingMapper {
		def := meta.NewDefaultRESTMapper(nil)
		for _, k := range kinds {
			def.Add(k, meta.RESTScopeNamespace)
		}
		return &countingMapper{RESTMapper: def}
	}
	// The cluster as discovery shows it: what the next RESTMapper knows.
	cluster := []schema.GroupVersionKind{widget}
	var made []*countingMapper
	renew := func() (meta.RESTMapper, error) {
		m := served(cluster...)
		made = append(made, m)
		return m, nil
	}
	first, _ := renew()
	m := newRememberingMapper(first, renew)
	ask := func() error {
		_, err := m.RESTMapping(widget.GroupKind(), widget.Version)
		return err
	}
	if err := ask(); err != nil {
		t.Fatal(err)
	}
	cluster = nil // its CRD deleted
	if err := ask(); err != nil || len(made) != 1 {
		t.Fatalf("before Invalidate: %v, %d mappers made; want the kept mapping, 1", err, len(made))
	}
	m.Invalidate()
	m.Invalidate() // twice: still one new mapper, made when asked
	if len(made) != 1 {
		t.Fatalf("%d mappers made by Invalidate, want none until asked", len(made)-1)
	}
	if err := ask(); !meta.IsNoMatchError(err) {
		t.Fatalf("after Invalidate: %v, want no match", err)
	}
	if len(made) != 2 || made[1].asked != 1 {
		t.Fatalf("%d mappers made, want 2, the new one asked once", len(made))
	}
	// Served again: an unknown kind is always asked; nothing new is made
	// until the next Invalidate.
	made[1].RESTMapper.(*meta.DefaultRESTMapper).Add(widget, meta.RESTScopeNamespace)
	if err := ask(); err != nil || len(made) != 2 {
		t.Fatalf("served again: %v, %d mappers made; want the mapping, 2", err, len(made))
	}
	// Other questions are asked of the new mapper too.
	m.Invalidate()
	cluster = nil
	if _, err := m.KindFor(widget.GroupVersion().WithResource("widgets")); !meta.IsNoMatchError(err) || len(made) != 3 {
		t.Fatalf("KindFor after Invalidate: %v, %d mappers made; want no match, 3", err, len(made))
	}
}
