package review

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestFromReader checks the Live of a controller-runtime reader: a
// missing object is nil without error, lists hold every namespace.
func TestFromReader(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := rbacv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "x"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "y"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}},
	).Build()
	live := FromReader(c)
	ctx := context.Background()
	gvk := rbacGVK(roleBindingGK)
	u, err := live.Get(ctx, gvk, "x", "missing")
	if u != nil || err != nil {
		t.Errorf("Get(missing) = %v, %v; want nil, nil", u, err)
	}
	u, err = live.Get(ctx, gvk, "y", "b")
	if err != nil || u == nil || u.GetName() != "b" {
		t.Errorf("Get(y/b) = %v, %v", u, err)
	}
	list, err := live.List(ctx, gvk)
	if err != nil || len(list) != 2 {
		t.Errorf("List() = %d objects, %v; want 2", len(list), err)
	}
}
