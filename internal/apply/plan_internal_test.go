package apply

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestPlanIsAValue: nothing done with a Plan after Prepare changes it —
// not WithIgnored or Subset, which return new plans, nor what a run of it
// decides about its objects.
func TestPlanIsAValue(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"}, meta.RESTScopeNamespace)
	e := New(nil, nil, nil, mapper, Options{FieldManager: "test", OwnerKind: "Owner", Keys: Keys{OwnerKind: "o/kind", OwnerName: "o/name", OwnerUID: "o/uid", Revision: "o/rev"}})
	cm := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name}}}
	}
	p, err := e.Prepare([]*unstructured.Unstructured{cm("a"), cm("b")}, "ns", Owner{Name: "bd", Revision: "bd-1"})
	if err != nil {
		t.Fatal(err)
	}
	snapshot := func(p *Plan) []item { return append([]item(nil), p.items...) }
	before := snapshot(p)
	rule := IgnoreRule{Kind: "ConfigMap", Name: "a", Paths: []FieldPath{{"data", "x"}}}
	tests := []struct {
		name string
		do   func(t *testing.T)
	}{
		{name: "WithIgnored", do: func(t *testing.T) {
			q := p.WithIgnored([]IgnoreRule{rule})
			if len(q.items[0].ignore) != 1 || len(q.items[1].ignore) != 0 {
				t.Errorf("the new plan's ignored fields = %v, %v; want the rule's on a only", q.items[0].ignore, q.items[1].ignore)
			}
			if r := q.WithIgnored(nil); len(r.items[0].ignore) != 0 || len(q.items[0].ignore) != 1 {
				t.Error("WithIgnored(nil) of a plan with rules did not return a plan without them, or changed its receiver")
			}
		}},
		{name: "Subset", do: func(t *testing.T) {
			if q := p.Subset(p.IDs()[1:]); q.Len() != 1 {
				t.Errorf("Subset has %d objects, want 1", q.Len())
			}
		}},
		{name: "a run's decisions", do: func(t *testing.T) {
			r := newRun(p, ApplyOptions{Direct: true, Hooks: HooksInstall})
			r.items[0].create, r.items[0].replace, r.items[1].takeOver = true, true, true
			if !r.direct || r.hookRun != HooksInstall {
				t.Errorf("run = direct %v, hooks %v; want the options'", r.direct, r.hookRun)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.do(t)
			if !reflect.DeepEqual(snapshot(p), before) {
				t.Errorf("the plan changed: %+v, was %+v", p.items, before)
			}
		})
	}
}
