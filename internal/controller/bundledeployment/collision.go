package bundledeployment

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/inventory"
)

// collisions are the collision rules of an install of s (objects another
// BundleDeployment released are taken through its release record, see
// release.go): objects the
// BundleDeployment applied — those its inventory (tied to its UID) has a
// record of, and those the last successful install applied — are its own;
// anything else that exists is checked (see apply.Collisions; recordClaims
// records what it refused for another's). An ID in the
// inventory without a record was only planned (recorded before a write, or
// by a revision that failed): a stranger's object a refused revision named
// stays a stranger's, and one the failed revision did write carries this
// BundleDeployment's labels, which the check accepts.
func (r *Reconciler) collisions(s *scope, st *appliedState, recs map[inventory.ID]inventory.Record) *apply.Collisions {
	owned := map[inventory.ID]bool{}
	for key := range recs {
		owned[key] = true
	}
	if st != nil {
		for _, id := range st.ids {
			owned[id.Key()] = true
		}
	}
	return &apply.Collisions{
		Policy: collisionPolicy(s.bd.Spec.CollisionProtection),
		Owned:  owned,
		Owner:  r.ownerState,
		Take:   r.take(s.bd),
	}
}

// recordClaims records the claimed objects an apply of BundleDeployment name
// was refused for, because another BundleDeployment manages them
// (apply.Error.Held), as claimed by name, so that the one managing them
// hands them over instead of deleting them when it drops them, and
// reports whether there were any: the revision then waits for a hand-off.
func (r *Reconciler) recordClaims(name string, err error) (waits bool) {
	ae := apply.As(err)
	if ae == nil {
		return false
	}
	for _, h := range ae.Held() {
		r.mem.claim(h.ID, name)
		waits = true
	}
	return waits
}

// ownerState tells what BundleDeployment other (uid as the object's label
// records it, "" if it has none) makes of id: gone when no
// BundleDeployment of that name and UID exists (the label is stale),
// released when its inventory (saved after every successful install and
// prune) does not have id any more, else it manages it.
func (r *Reconciler) ownerState(ctx context.Context, other string, uid types.UID, id inventory.ID) (apply.OwnerState, error) {
	bd := &v1alpha2.BundleDeployment{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: other}, bd); err != nil {
		if apierrors.IsNotFound(err) {
			return apply.OwnerGone, nil
		}
		return apply.OwnerHolds, fmt.Errorf("getting BundleDeployment %s: %w", other, err)
	}
	if uid != "" && bd.UID != uid {
		return apply.OwnerGone, nil
	}
	ids, err := r.Inventory.Load(ctx, inventoryOf(bd))
	if err != nil {
		return apply.OwnerHolds, fmt.Errorf("loading the inventory of BundleDeployment %s: %w", other, err)
	}
	key := id.Key()
	if slices.ContainsFunc(ids, func(x inventory.ID) bool { return x.Key() == key }) {
		return apply.OwnerHolds, nil
	}
	return apply.OwnerReleased, nil
}

// inventoryOf is whose inventory bd's is: its name and UID.
func inventoryOf(bd *v1alpha2.BundleDeployment) inventory.Owner {
	return inventory.Owner{Name: bd.Name, UID: bd.UID}
}

// claimedByOther reports whether a BundleDeployment other than owner waits
// for the object id.
func (r *Reconciler) claimedByOther(owner string) func(inventory.ID) bool {
	return func(id inventory.ID) bool { return r.mem.claimedByOther(owner, id) }
}

// handOver wakes the BundleDeployments waiting for the objects a prune
// left in place, once the owner's inventory does not list them.
func (r *Reconciler) handOver(cs *apply.ChangeSet, owner string) {
	if cs == nil {
		return
	}
	for _, name := range r.mem.release(cs, owner) {
		bd := &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: name}}
		select {
		case r.wake <- event.GenericEvent{Object: bd}:
		default: // the queue is flooded; the claimant's own retry will do
		}
	}
}

// dropClaims forgets the claims of BundleDeployment name (it was deleted).
func (r *Reconciler) dropClaims(name string) { r.mem.dropClaims(name) }
