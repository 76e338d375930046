package apply

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/inventory"
)

// Collisions decide which existing objects a plan may take over. An object
// that exists before the apply and is not in Owned is checked: one another
// BundleDeployment manages is refused unless that BundleDeployment has
// released it (a hand-off); one no BundleDeployment manages is taken
// according to Policy.
type Collisions struct {
	// Policy is spec.collisionProtection; empty means Prevent.
	Policy v1alpha2.CollisionProtection
	// Owned are the keys (inventory.ID.Key) of the objects the owner
	// already manages; they are never collisions.
	Owned map[inventory.ID]bool
	// Released reports whether BundleDeployment other no longer has id in
	// its installed revision, so that it may pass to the owner. nil means
	// never.
	Released func(ctx context.Context, other string, id inventory.ID) (bool, error)
	// Blocked, when set, is told of every object refused because
	// BundleDeployment other manages it, so that other can hand it over
	// when it drops the object.
	Blocked func(other string, id inventory.ID)
}

// collision checks the existing object of it against the plan's collision
// rules; it returns "" when the plan may apply it, else why not.
func (e *Engine) collision(ctx context.Context, p *Plan, it item) (string, error) {
	c := p.collisions
	if c == nil || c.Owned[it.id.Key()] {
		return "", nil
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(it.id.GroupVersionKind())
	err := e.live().Get(ctx, client.ObjectKey{Namespace: it.id.Namespace, Name: it.id.Name}, obj)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("getting %s to check ownership: %w", it.id, err)
	}
	labels := obj.GetLabels()
	if labels[v1alpha2.LabelOwnerKind] == v1alpha2.BundleDeploymentKind {
		other := labels[v1alpha2.LabelOwnerName]
		if other == p.owner.Name || other == "" {
			return "", nil
		}
		if c.Released != nil {
			released, err := c.Released(ctx, other, it.id)
			if err != nil {
				return "", err
			}
			if released {
				return "", nil
			}
		}
		if c.Blocked != nil {
			c.Blocked(other, it.id)
		}
		return fmt.Sprintf("object %s is managed by BundleDeployment %s; it can move here only once %s's installed revision no longer has it",
			it.id, other, other), nil
	}
	switch c.Policy {
	case v1alpha2.CollisionProtectionNone:
		return "", nil
	case v1alpha2.CollisionProtectionIfNoController:
		if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
			return fmt.Sprintf("object %s exists and is controlled by %s %s; collisionProtection IfNoController adopts only objects without a controller",
				it.id, ref.Kind, ref.Name), nil
		}
		return "", nil
	}
	return fmt.Sprintf("object %s exists and is not managed by this BundleDeployment (%s); set spec.collisionProtection to IfNoController or None to adopt it",
		it.id, managers(obj)), nil
}

// managers describes who manages obj, from its controller and managedFields.
func managers(obj *metav1.PartialObjectMetadata) string {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		return fmt.Sprintf("controlled by %s %s", ref.Kind, ref.Name)
	}
	set := map[string]bool{}
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager != "" {
			set[mf.Manager] = true
		}
	}
	if len(set) == 0 {
		return "no field manager recorded"
	}
	names := make([]string, 0, len(set))
	for m := range set {
		names = append(names, m)
	}
	sort.Strings(names)
	return "field managers: " + strings.Join(names, ", ")
}
