package apply

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// rbacGroup is the API group of Roles, ClusterRoles and their bindings.
const rbacGroup = "rbac.authorization.k8s.io"

// isRole reports whether it is a Role or ClusterRole. They are written
// before the other ordinary objects of a plan: the API server authorizes a
// binding by the rules of the role it names (unless the writer may bind
// it), so a binding written before its role is refused with "not found"
// when the install identity is not a cluster admin, and an operator's
// bindings would fail at random, as the concurrent writes fell.
func isRole(it item) bool {
	return it.id.Group == rbacGroup && (it.id.Kind == "Role" || it.id.Kind == "ClusterRole")
}

// roleOfPlanMissing reports whether err, from the dry-run of binding it,
// only says that the role it binds does not exist yet, while the plan
// holds that role. (The API server answers the apply of a binding whose
// role is missing, from a writer who may not bind any role, with "not
// found", naming the binding.) The binding is then valid as far as a
// dry-run can tell: the role's own dry-run checked that the identity holds
// every rule of it (the escalation check), which is what binding it needs
// too, and the role is written before the binding.
func (e *Engine) roleOfPlanMissing(ctx context.Context, p *run, it item, err error) bool {
	if !apierrors.IsNotFound(err) || it.id.Group != rbacGroup || (it.id.Kind != "RoleBinding" && it.id.Kind != "ClusterRoleBinding") {
		return false
	}
	kind, _, _ := unstructured.NestedString(it.obj.Object, "roleRef", "kind")
	name, _, _ := unstructured.NestedString(it.obj.Object, "roleRef", "name")
	ns := it.id.Namespace
	if kind == "ClusterRole" {
		ns = ""
	}
	// Only the items' ids are read: validation's other goroutines write
	// other fields of the items meanwhile.
	for i := range p.items {
		id := p.items[i].id
		if id.Group == rbacGroup && id.Kind == kind && (kind == "Role" || kind == "ClusterRole") && id.Name == name && id.Namespace == ns {
			role := &metav1.PartialObjectMetadata{}
			role.SetGroupVersionKind(id.GroupVersionKind())
			gerr := e.live().Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, role)
			return apierrors.IsNotFound(gerr)
		}
	}
	return false
}
