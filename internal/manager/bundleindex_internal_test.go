package manager

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// TestBundleIndexClientListsAsTheCache: lists of Bundles through the index
// find what label matching finds, whatever else the selector asks.
func TestBundleIndexClientListsAsTheCache(t *testing.T) {
	scheme, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	bundle := func(name string, l map[string]string) client.Object {
		return &v1alpha2.Bundle{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
	}
	objs := []client.Object{
		bundle("a-1", map[string]string{v1alpha2.LabelBundleDeployment: "a", v1alpha2.LabelRevision: "1"}),
		bundle("a-2", map[string]string{v1alpha2.LabelBundleDeployment: "a", v1alpha2.LabelRevision: "2"}),
		bundle("b-1", map[string]string{v1alpha2.LabelBundleDeployment: "b", v1alpha2.LabelRevision: "1"}),
		bundle("none", nil),
	}
	plain := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	indexed := bundleIndexClient{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithIndex(&v1alpha2.Bundle{}, indexBundleOf, bundleOf).Build()}
	two, err := labels.Parse(v1alpha2.LabelBundleDeployment + "=a," + v1alpha2.LabelRevision + "=2")
	if err != nil {
		t.Fatal(err)
	}
	for name, opts := range map[string][]client.ListOption{
		"one BundleDeployment":       {client.MatchingLabels{v1alpha2.LabelBundleDeployment: "a"}},
		"no such BundleDeployment":   {client.MatchingLabels{v1alpha2.LabelBundleDeployment: "c"}},
		"and another label":          {client.MatchingLabelsSelector{Selector: two}},
		"another label only":         {client.MatchingLabels{v1alpha2.LabelRevision: "1"}},
		"everything":                 nil,
		"BundleDeployment label set": {client.HasLabels{v1alpha2.LabelBundleDeployment}},
	} {
		t.Run(name, func(t *testing.T) {
			want, got := &v1alpha2.BundleList{}, &v1alpha2.BundleList{}
			if err := plain.List(context.Background(), want, opts...); err != nil {
				t.Fatal(err)
			}
			if err := indexed.List(context.Background(), got, opts...); err != nil {
				t.Fatal(err)
			}
			if w, g := names(want), names(got); !slices.Equal(w, g) {
				t.Errorf("listed %v, want %v", g, w)
			}
		})
	}
}

func names(l *v1alpha2.BundleList) []string {
	var out []string
	for _, b := range l.Items {
		out = append(out, b.Name)
	}
	slices.Sort(out)
	return out
}
