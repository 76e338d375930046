package crdsafety

import (
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestCRDWideFindings sorts CRD-wide changes into findings that always
// hold and findings that hold only when objects exist, and picks the
// versions whose objects are checked.
func TestCRDWideFindings(t *testing.T) {
	spec := object(props{"a": str()})
	narrower := object(props{"a": enum(`"x"`)})
	edit := func(crd *apiextensionsv1.CustomResourceDefinition, f func(*apiextensionsv1.CustomResourceDefinition)) *apiextensionsv1.CustomResourceDefinition {
		f(crd)
		return crd
	}
	tests := []struct {
		name          string
		old, new      *apiextensionsv1.CustomResourceDefinition
		wantAlways    []string
		wantIfObjects []string
		wantVersions  []string
	}{
		{name: "unchanged", old: newCRD(version("v1", spec)), new: newCRD(version("v1", spec))},
		{name: "schema changed", old: newCRD(version("v1", spec)), new: newCRD(version("v1", narrower)), wantVersions: []string{"v1"}},
		{
			name: "stored version removed: always, and not also a dropped served version",
			old: edit(newCRD(version("v1", spec), version("v1beta1", spec)), func(c *apiextensionsv1.CustomResourceDefinition) {
				c.Status.StoredVersions = []string{"v1", "v1beta1"}
			}),
			new:        newCRD(version("v1", spec)),
			wantAlways: []string{"StoredVersionRemoved:v1beta1"},
		},
		{
			name:          "served version never stored removed, another one unserved",
			old:           newCRD(version("v1", spec), version("v1beta1", spec), version("v1alpha1", spec)),
			new:           edit(newCRD(version("v1", narrower), version("v1alpha1", narrower)), func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Versions[1].Served = false }),
			wantIfObjects: []string{"ServedVersionDropped:v1beta1", "ServedVersionDropped:v1alpha1"},
			wantVersions:  []string{"v1"},
		},
		{
			name: "unserved version removed",
			old:  edit(newCRD(version("v1", spec), version("v1beta1", spec)), func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Versions[1].Served = false }),
			new:  newCRD(version("v1", spec)),
		},
		{
			name: "scope and kind",
			old:  newCRD(version("v1", spec)),
			new: edit(newCRD(version("v1", spec)), func(c *apiextensionsv1.CustomResourceDefinition) {
				c.Spec.Scope, c.Spec.Names.Kind = apiextensionsv1.ClusterScoped, "Gadget"
			}),
			wantIfObjects: []string{"ScopeChanged", "KindChanged"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			always, ifObjects := crdWideFindings(tt.old, tt.new, Compare(tt.old, tt.new))
			if got := ids(always); !reflect.DeepEqual(got, tt.wantAlways) {
				t.Errorf("always = %v, want %v", got, tt.wantAlways)
			}
			if got := ids(ifObjects); !reflect.DeepEqual(got, tt.wantIfObjects) {
				t.Errorf("ifObjects = %v, want %v", got, tt.wantIfObjects)
			}
			if got := changedVersions(tt.old, tt.new); !reflect.DeepEqual(got, tt.wantVersions) {
				t.Errorf("changedVersions = %v, want %v", got, tt.wantVersions)
			}
		})
	}
}

// TestJudgeExplains: a finding's message is the schema change at its path
// (for a pruned value also at a parent), else a generic sentence.
func TestJudgeExplains(t *testing.T) {
	changes := []Change{
		{Version: "v1", Path: ".status.conditions[*].reason", Rule: RuleRequiredAdded, Message: "optional field became required"},
		{Version: "v1", Path: ".spec.free", Rule: RuleUnknownFieldsDropped, Message: "unknown fields are no longer preserved"},
	}
	j := newJudge(changes, DefaultOptions())
	tests := []struct {
		kind          Kind
		version, path string
		want          string
	}{
		{KindInvalid, "v1", ".status.conditions[*].reason", "optional field became required"},
		{KindInvalid, "v2", ".status.conditions[*].reason", "values valid before fail the new schema"},
		{KindPruned, "v1", ".spec.free.x.y", "unknown fields are no longer preserved"},
		{KindPruned, "v1", ".spec.other", "the new schema no longer keeps this field"},
		{KindInvalid, "v1", ".spec.free.x", "values valid before fail the new schema"},
	}
	for _, tt := range tests {
		if got := j.explain(tt.kind, tt.version, tt.path); got != tt.want {
			t.Errorf("explain(%s, %s, %s) = %q, want %q", tt.kind, tt.version, tt.path, got, tt.want)
		}
	}
}
