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

	"github.com/rukpak/rukpak/internal/inventory"
)

// Collisions decide which existing objects a plan may take over. An object
// that exists before the apply and is not in Owned is checked:
//
//   - one another BundleDeployment manages is refused while that one's
//     installed revision has it;
//   - one labelled for a BundleDeployment that no longer has it — a live
//     one whose revision dropped it, or one that is gone (a deleted one,
//     or one of the same name with another UID) — is taken when that
//     BundleDeployment released it (Take: rukpak's record of the objects
//     it left in place, by UID) and no other took it first; when it did
//     not, it is a stale owner's, taken according to Policy;
//   - a ClusterRole the clusterrole-aggregation controller wrote back
//     after a delete is taken (see husk);
//   - any other object (no BundleDeployment's) is taken according to
//     Policy — Prevent, the default, refuses it.
type Collisions struct {
	// Policy is how objects no live owner manages are treated; empty
	// means CollisionPrevent.
	Policy CollisionPolicy
	// Owned are the keys (inventory.ID.Key) of the objects the owner has
	// applied (what its inventory records as applied, and its last apply);
	// they are never collisions.
	Owned map[inventory.ID]bool
	// Owner tells what BundleDeployment other (uid as the object's
	// owner-uid label records it, "" when it has none) makes of id. nil
	// means every other owner holds its objects.
	Owner func(ctx context.Context, other string, uid types.UID, id inventory.ID) (OwnerState, error)
	// Take, when set, asks the release record of the BundleDeployment an
	// object is labelled for whether it released the object, and takes
	// the object for the plan's owner when it did (see
	// inventory.Store.Take); it names the BundleDeployment that took it
	// first, for TakenByOther. nil lets every object a live owner no
	// longer has be taken, and none of an owner that is gone.
	Take func(ctx context.Context, r Release) (inventory.TakeVerdict, string, error)
}

// collision is why an existing object may not be taken; the zero value
// lets the plan take it.
type collision struct {
	// why says why not, naming the object.
	why string
	// heldBy names the BundleDeployment that holds the object, when that
	// is why (see Held).
	heldBy string
}

// CollisionPolicy is how a plan treats an existing object that no live
// owner manages (see Collisions).
type CollisionPolicy string

// The policies.
const (
	// CollisionPrevent refuses the object (the default).
	CollisionPrevent CollisionPolicy = "Prevent"
	// CollisionIfNoController takes the object over unless another
	// object controls it (a controller owner reference).
	CollisionIfNoController CollisionPolicy = "IfNoController"
	// CollisionNone takes the object over as it is.
	CollisionNone CollisionPolicy = "None"
)

// Release is an object labelled for a BundleDeployment that no longer has
// it, which a plan would take over.
type Release struct {
	// Owner and UID are the BundleDeployment the object's labels name.
	Owner string
	UID   types.UID
	// ID names the object, Object is its UID.
	ID     inventory.ID
	Object types.UID
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
// rules; it returns the zero collision when the plan may apply it, else
// why not. obj is the object's metadata as read already, or nil to read
// it.
func (e *Engine) collision(ctx context.Context, p *run, it item, obj *metav1.PartialObjectMetadata) (collision, error) {
	why, heldBy, err := e.collides(ctx, p, it, obj)
	return collision{why: why, heldBy: heldBy}, err
}

// collides is collision's work: why the plan may not take it's object
// ("" when it may) and, when another BundleDeployment holds it, which.
func (e *Engine) collides(ctx context.Context, p *run, it item, obj *metav1.PartialObjectMetadata) (why, heldBy string, err error) {
	c := p.collisions
	if c == nil || c.Owned[it.id.Key()] {
		return "", "", nil
	}
	if obj == nil {
		obj = &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(it.id.GroupVersionKind())
		err := e.live().Get(ctx, client.ObjectKey{Namespace: it.id.Namespace, Name: it.id.Name}, obj)
		if apierrors.IsNotFound(err) {
			return "", "", nil
		}
		if err != nil {
			return "", "", fmt.Errorf("getting %s to check ownership: %w", it.id, err)
		}
	}
	labels := obj.GetLabels()
	other, uid := labels[e.opts.Keys.OwnerName], types.UID(labels[e.opts.Keys.OwnerUID])
	if labels[e.opts.Keys.OwnerKind] != e.opts.OwnerKind || other == "" {
		if husk(it, obj) {
			return "", "", nil
		}
		return adopt(c.Policy, obj, fmt.Sprintf("object %s exists and is not managed by this %s (%s)", it.id, e.opts.OwnerKind, managers(obj))), "", nil
	}
	state := OwnerGone
	switch {
	case other == p.owner.Name && uid != "" && uid == p.owner.UID:
		return "", "", nil
	case other == p.owner.Name && p.owner.UID != "":
		// Labelled with this name but another (or no) UID, and not
		// in this BundleDeployment's inventory: left by a deleted
		// BundleDeployment of the same name.
	case other == p.owner.Name:
		return "", "", nil
	case c.Owner != nil:
		if state, err = c.Owner(ctx, other, uid, it.id); err != nil {
			return "", "", err
		}
	default:
		state = OwnerHolds
	}
	if state == OwnerHolds {
		return fmt.Sprintf("object %s is managed by %s %s; it can move here only once %s's installed revision no longer has it",
			it.id, e.opts.OwnerKind, other, other), other, nil
	}
	why, err = e.takeReleased(ctx, c, it, obj, other, uid, state)
	return why, "", err
}

// takeReleased decides on an object labelled for BundleDeployment other
// (uid), which no longer has it (state): taken when other released it and
// no one else took it first, else a stale owner's object, taken according
// to the policy.
func (e *Engine) takeReleased(ctx context.Context, c *Collisions, it item, obj *metav1.PartialObjectMetadata, other string, uid types.UID, state OwnerState) (string, error) {
	kind := e.opts.OwnerKind
	if c.Take == nil {
		if state == OwnerReleased {
			return "", nil
		}
	} else {
		verdict, by, err := c.Take(ctx, Release{Owner: other, UID: uid, ID: it.id, Object: obj.GetUID()})
		if err != nil {
			return "", err
		}
		switch verdict {
		case inventory.Granted:
			return "", nil
		case inventory.TakenByOther:
			return fmt.Sprintf("object %s, which %s %s left in place, is being taken over by %s %s; it can move here only once %s's installed revision no longer has it, or %s is deleted",
				it.id, kind, other, kind, by, by, by), nil
		}
	}
	if state == OwnerReleased {
		return adopt(c.Policy, obj, fmt.Sprintf("object %s is labelled as managed by %s %s, whose installed revision does not have it, and %s did not release it (rukpak has no record of leaving this object in place: someone else wrote its labels)",
			it.id, kind, other, other)), nil
	}
	return adopt(c.Policy, obj, fmt.Sprintf("object %s is labelled as managed by %s %s%s, which no longer exists (a stale owner) and did not release it (rukpak has no record of leaving this object in place: the finalizer was removed by hand, or someone else wrote its labels)",
		it.id, kind, other, uidNote(uid))), nil
}

// adopt applies policy to an object no live owner manages:
// "" when it may be taken, else why not (what starting with the object).
func adopt(policy CollisionPolicy, obj *metav1.PartialObjectMetadata, what string) string {
	switch policy {
	case CollisionNone:
		return ""
	case CollisionIfNoController:
		if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
			return fmt.Sprintf("%s and is controlled by %s %s; collisionProtection IfNoController adopts only objects without a controller",
				what, ref.Kind, ref.Name)
		}
		return ""
	}
	return what + "; delete it, or, to take it over as it is, set spec.collisionProtection to IfNoController or None"
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
