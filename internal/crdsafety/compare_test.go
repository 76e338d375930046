package crdsafety

import (
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestCompareCRDWide checks scope, kind and version rules and the order of
// changes across versions.
func TestCompareCRDWide(t *testing.T) {
	spec := object(props{"a": str()})
	narrower := object(props{"a": enum(`"x"`)})
	withStored := func(crd *apiextensionsv1.CustomResourceDefinition, stored ...string) *apiextensionsv1.CustomResourceDefinition {
		crd.Status.StoredVersions = stored
		return crd
	}
	tests := []struct {
		name     string
		old, new *apiextensionsv1.CustomResourceDefinition
		want     []Change
	}{
		{
			name: "unchanged",
			old:  newCRD(version("v1", spec)),
			new:  newCRD(version("v1", spec)),
		},
		{
			name: "nil CRDs",
			old:  nil,
			new:  newCRD(version("v1", spec)),
		},
		{
			name: "scope changed",
			old:  newCRD(version("v1", spec)),
			new: func() *apiextensionsv1.CustomResourceDefinition {
				crd := newCRD(version("v1", spec))
				crd.Spec.Scope = apiextensionsv1.ClusterScoped
				return crd
			}(),
			want: []Change{{Rule: RuleScopeChanged, Message: "scope changed from Namespaced to Cluster"}},
		},
		{
			name: "kind changed",
			old:  newCRD(version("v1", spec)),
			new: func() *apiextensionsv1.CustomResourceDefinition {
				crd := newCRD(version("v1", spec))
				crd.Spec.Names.Kind = "Gadget"
				return crd
			}(),
			want: []Change{{Rule: RuleKindChanged, Message: "kind changed from Widget to Gadget"}},
		},
		{
			name: "stored version removed",
			old:  withStored(newCRD(version("v1alpha1", spec), version("v1", spec)), "v1alpha1", "v1"),
			new:  newCRD(version("v1", spec)),
			want: []Change{{
				Version: "v1alpha1", Rule: RuleStoredVersionRemoved,
				Message: "version is listed in status.storedVersions but removed from spec.versions",
			}},
		},
		{
			name: "never stored version removed",
			old:  withStored(newCRD(version("v1", spec), version("v1beta1", narrower)), "v1"),
			new:  newCRD(version("v1", spec)),
		},
		{
			name: "version added",
			old:  newCRD(version("v1", spec)),
			new:  newCRD(version("v1", spec), version("v2", narrower)),
		},
		{
			name: "served turned off",
			old:  newCRD(version("v1", spec), version("v1beta1", spec)),
			new: func() *apiextensionsv1.CustomResourceDefinition {
				crd := newCRD(version("v1", spec), version("v1beta1", spec))
				crd.Spec.Versions[1].Served = false
				return crd
			}(),
		},
		{
			name: "version without schema",
			old:  newCRD(apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", Served: true}),
			new:  newCRD(version("v1", narrower)),
		},
		{
			name: "CRD-wide changes first, then versions in old order",
			old:  withStored(newCRD(version("v2", spec), version("v1", spec), version("v0", spec)), "v0", "v2"),
			new: func() *apiextensionsv1.CustomResourceDefinition {
				crd := newCRD(version("v1", narrower), version("v2", narrower))
				crd.Spec.Scope = apiextensionsv1.ClusterScoped
				return crd
			}(),
			want: []Change{
				{Rule: RuleScopeChanged, Message: "scope changed from Namespaced to Cluster"},
				{Version: "v0", Rule: RuleStoredVersionRemoved, Message: "version is listed in status.storedVersions but removed from spec.versions"},
				{Version: "v2", Path: ".spec.a", Rule: RuleEnumNarrowed, Message: `enum ["x"] added`},
				{Version: "v1", Path: ".spec.a", Rule: RuleEnumNarrowed, Message: `enum ["x"] added`},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Compare(tt.old, tt.new)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Compare() =\n%#v\nwant\n%#v", got, tt.want)
			}
		})
	}
}

// TestCompareDeterministic runs a comparison with many changes repeatedly:
// map iteration must not change the order.
func TestCompareDeterministic(t *testing.T) {
	oldProps, newProps := props{}, props{}
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		oldProps[name] = object(props{"x": integer(), "y": str(), "z": enum(`"1"`, `"2"`)})
		newProps[name] = object(props{"x": str(), "z": enum(`"1"`)}, "z")
	}
	oldCRD, newCRD := newCRD(version("v1", object(oldProps))), newCRD(version("v1", object(newProps)))
	first := Compare(oldCRD, newCRD)
	if len(first) != 8*4 {
		t.Fatalf("got %d changes, want %d: %v", len(first), 8*4, first)
	}
	for i := 0; i < 20; i++ {
		if got := Compare(oldCRD, newCRD); !reflect.DeepEqual(got, first) {
			t.Fatalf("run %d: order changed:\n%v\nfirst:\n%v", i, got, first)
		}
	}
}

// TestFindingString checks the rendering of changes with and without
// version and path.
func TestFindingString(t *testing.T) {
	tests := []struct {
		change Change
		want   string
	}{
		{Change{Rule: RuleScopeChanged, Message: "scope changed from Namespaced to Cluster"},
			"scope changed from Namespaced to Cluster"},
		{Change{Version: "v1alpha1", Rule: RuleStoredVersionRemoved, Message: "gone"},
			"version v1alpha1: gone"},
		{Change{Version: "v1", Path: ".spec.size", Rule: RuleTypeChanged, Message: "type changed from integer to string"},
			"version v1 field .spec.size: type changed from integer to string"},
		{Change{Path: ".spec", Message: "m"}, "field .spec: m"},
	}
	for _, tt := range tests {
		if got := tt.change.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}
