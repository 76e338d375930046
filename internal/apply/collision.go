package apply

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/inventory"
)

// Collisions decide which existing objects a plan may take over. An object
// that exists before the apply and is not in Owned is checked: one another
// BundleDeployment manages is refused unless that BundleDeployment has
// released it (a hand-off); one no BundleDeployment manages, or one
// labelled for a BundleDeployment that no longer exists (a stale owner: a
// deleted one, or one of the same name with another UID), is taken
// according to Policy — Prevent, the default, refuses it.
type Collisions struct {
	// Policy is spec.collisionProtection; empty means Prevent.
	Policy v1alpha2.CollisionProtection
	// Owned are the keys (inventory.ID.Key) of the objects the owner has
	// applied (what its inventory records as applied, and its last apply);
	// they are never collisions.
	Owned map[inventory.ID]bool
	// Owner tells what BundleDeployment other (uid as the object's
	// owner-uid label records it, "" when it has none) makes of id. nil
	// means every other owner holds its objects.
	Owner func(ctx context.Context, other string, uid types.UID, id inventory.ID) (OwnerState, error)
	// Blocked, when set, is told of every object refused because
	// BundleDeployment other manages it, so that other can hand it over
	// when it drops the object.
	Blocked func(other string, id inventory.ID)
}

// OwnerState is what the BundleDeployment an object is labelled for makes
// of it.
type OwnerState int

const (
	// OwnerHolds: the BundleDeployment exists and its installed revision
	// has the object.
	OwnerHolds OwnerState = iota
	// OwnerReleased: the BundleDeployment exists and its installed
	// revision no longer has the object, which may pass to another.
	OwnerReleased
	// OwnerGone: no BundleDeployment of that name and UID exists; the
	// label is stale.
	OwnerGone
)

// collision checks the existing object of it against the plan's collision
// rules; it returns "" when the plan may apply it, else why not. obj is the
// object's metadata as read already, or nil to read it.
func (e *Engine) collision(ctx context.Context, p *Plan, it item, obj *metav1.PartialObjectMetadata) (string, error) {
	c := p.collisions
	if c == nil || c.Owned[it.id.Key()] {
		return "", nil
	}
	if obj == nil {
		obj = &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(it.id.GroupVersionKind())
		err := e.live().Get(ctx, client.ObjectKey{Namespace: it.id.Namespace, Name: it.id.Name}, obj)
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("getting %s to check ownership: %w", it.id, err)
		}
	}
	labels := obj.GetLabels()
	other, uid := labels[v1alpha2.LabelOwnerName], types.UID(labels[v1alpha2.LabelOwnerUID])
	if labels[v1alpha2.LabelOwnerKind] == v1alpha2.BundleDeploymentKind && other != "" {
		state := OwnerGone
		switch {
		case other == p.owner.Name && uid != "" && uid == p.owner.UID:
			return "", nil
		case other == p.owner.Name && p.owner.UID != "":
			// Labelled with this name but another (or no) UID, and not
			// in this BundleDeployment's inventory: left by a deleted
			// BundleDeployment of the same name.
		case other == p.owner.Name:
			return "", nil
		case c.Owner != nil:
			var err error
			if state, err = c.Owner(ctx, other, uid, it.id); err != nil {
				return "", err
			}
		default:
			state = OwnerHolds
		}
		switch state {
		case OwnerReleased:
			return "", nil
		case OwnerHolds:
			if c.Blocked != nil {
				c.Blocked(other, it.id)
			}
			return fmt.Sprintf("object %s is managed by BundleDeployment %s; it can move here only once %s's installed revision no longer has it",
				it.id, other, other), nil
		}
		return adopt(c.Policy, obj, fmt.Sprintf("object %s is labelled as managed by BundleDeployment %s%s, which no longer exists (a stale owner)",
			it.id, other, uidNote(uid))), nil
	}
	return adopt(c.Policy, obj, fmt.Sprintf("object %s exists and is not managed by this BundleDeployment (%s)", it.id, managers(obj))), nil
}

// adopt applies policy to an object no live BundleDeployment manages:
// "" when it may be taken, else why not (what starting with the object).
func adopt(policy v1alpha2.CollisionProtection, obj *metav1.PartialObjectMetadata, what string) string {
	switch policy {
	case v1alpha2.CollisionProtectionNone:
		return ""
	case v1alpha2.CollisionProtectionIfNoController:
		if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
			return fmt.Sprintf("%s and is controlled by %s %s; collisionProtection IfNoController adopts only objects without a controller",
				what, ref.Kind, ref.Name)
		}
		return ""
	}
	return what + "; set spec.collisionProtection to IfNoController or None to adopt it"
}

func uidNote(uid types.UID) string {
	if uid == "" {
		return " (no uid recorded)"
	}
	return fmt.Sprintf(" (uid %s)", uid)
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
