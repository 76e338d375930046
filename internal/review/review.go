package review

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// Live reads live objects, as the manager sees them. A nil Live reviews
// without a cluster: no object is live.
type Live interface {
	// Get returns the live object of kind gvk, or nil and no error when
	// there is none (a NotFound or NoKindMatch error also counts as none).
	Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error)
	// List returns every live object of kind gvk in every namespace.
	// Compute lists only ClusterRoles (for aggregation), and
	// ClusterRoleBindings and RoleBindings when the rules of a role
	// change.
	List(ctx context.Context, gvk schema.GroupVersionKind) ([]*unstructured.Unstructured, error)
}

// Input is what Compute reviews.
type Input struct {
	// Active are the active revision's rendered objects; empty for a first
	// install, or when they are not known (then the new revision's objects
	// are compared with the live ones, and nothing is reported removed).
	Active []*unstructured.Unstructured
	// New are the new revision's rendered objects.
	New []*unstructured.Unstructured
	// InstallNamespace is where namespaced objects without a namespace go.
	InstallNamespace string
	// Mapper maps kinds to resources and scope; a kind it does not know is
	// looked up in the CRDs of New and Active. Nil to use those CRDs only.
	Mapper meta.RESTMapper
	// Live reads the cluster; nil for none.
	Live Live
}

// Compute reviews in.New against in.Active and the cluster (see the
// package documentation for how). It writes nothing. An error means the
// review could not be made (a kind no one maps, a read that failed, more
// RBAC rules than MaxAtoms, a *TooLargeError): the caller should not
// treat the revision as reviewed. The cost of the RBAC review is
// estimated first, so a revision whose rules would expand past MaxAtoms
// is refused before anything is expanded or read from the cluster.
func Compute(ctx context.Context, in Input) (*v1alpha2.RevisionReview, error) {
	if err := CheckCost(in.Active, in.New); err != nil {
		return nil, err
	}
	k, err := newKinds(in.Mapper, in.New, in.Active)
	if err != nil {
		return nil, err
	}
	active, err := place(in.Active, k, in.InstallNamespace)
	if err != nil {
		return nil, fmt.Errorf("placing the active revision's objects: %w", err)
	}
	next, err := place(in.New, k, in.InstallNamespace)
	if err != nil {
		return nil, fmt.Errorf("placing the new revision's objects: %w", err)
	}
	ps, err := pairUp(ctx, in.Live, active, next)
	if err != nil {
		return nil, err
	}
	rbac, err := reviewRBAC(ctx, in.Live, ps)
	if err != nil {
		return nil, fmt.Errorf("reviewing RBAC: %w", err)
	}
	surface, err := reviewSurface(ps)
	if err != nil {
		return nil, fmt.Errorf("reviewing the API surface: %w", err)
	}
	ident, err := reviewIdentity(active, next)
	if err != nil {
		return nil, fmt.Errorf("reviewing the install identity's needs: %w", err)
	}
	objects := reviewObjects(ps)
	surface.unmodeled = reviewUnmodeled(objects)
	f := findings{objects: objects, rbac: rbac, surface: surface, identity: ident}
	return f.stored(), nil
}
