package objdiff

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestSideBySides(t *testing.T) {
	cm := func(value string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "c", "resourceVersion": "7"}, "data": map[string]any{"a": "1", "b": value}}}
	}
	secret := func(value string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": "s"}, "data": map[string]any{"k": value}}}
	}
	got, err := SideBySides([]Object{
		{Name: "z-same", Live: cm("x"), Merged: cm("x")},
		{Name: "c", Live: cm("old"), Merged: cm("new")},
		{Name: "added", Merged: cm("x")},
		{Name: "s", Live: secret("c2VjcmV0MQ=="), Merged: secret("c2VjcmV0Mg==")},
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range got {
		names = append(names, d.Name)
	}
	if strings.Join(names, ",") != "added,c,s" {
		t.Fatalf("objects %v, want the changed ones sorted, the unchanged left out", names)
	}
	var changed []Row
	for _, r := range got[1].Rows {
		if r.Op != OpEqual {
			changed = append(changed, r)
		}
	}
	if len(changed) != 1 || changed[0] != (Row{Op: OpChanged, Left: "  b: old", Right: "  b: new"}) {
		t.Errorf("rows of c: %+v, want one changed line b", changed)
	}
	for _, r := range got[0].Rows {
		if r.Op != OpAdded || r.Left != "" {
			t.Errorf("row %+v of an added object, want added with an empty left side", r)
		}
	}
	for _, r := range got[2].Rows {
		if strings.Contains(r.Left+r.Right, "c2VjcmV0") {
			t.Errorf("a Secret value shows: %+v", r)
		}
	}
}
