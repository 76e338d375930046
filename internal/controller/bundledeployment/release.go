package bundledeployment

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/inventory"
)

// Objects a BundleDeployment leaves in place — CRDs on delete (unless
// deletionPolicy.crds is Delete),
// objects its revision applied with helm.sh/resource-policy: keep (on
// delete and when a revision drops them), objects another
// BundleDeployment waits for — are released: listed, by UID, in its
// release record (inventory.Store.Release), which only the manager
// writes. A later BundleDeployment whose revision has them takes them
// over through that record, once, without a collision (apply.Collisions
// Take); one reinstalled under the same name takes back its own CRDs.

// keeps returns which of owner's objects a prune leaves in place: those
// another BundleDeployment claims, and those the revision that applied
// them marked helm.sh/resource-policy: keep (recs, the inventory's
// records; never what the live object's annotations say, which others
// may write).
func (r *Reconciler) keeps(owner string, recs map[inventory.ID]inventory.Record) func(inventory.ID) bool {
	claimed := r.claimedByOther(owner)
	return func(id inventory.ID) bool { return recs[id.Key()].Keep || claimed(id) }
}

// release records the objects cs left in place as released by bd, and
// forgets those of forget (bd applies them again). Objects beyond what a
// record has room for stay in place unrecorded, and an event says so.
func (r *Reconciler) release(ctx context.Context, bd *v1alpha2.BundleDeployment, cs *apply.ChangeSet, forget []inventory.ID) error {
	var kept []inventory.Released
	if cs != nil {
		for _, c := range cs.Entries {
			if c.Action == apply.Kept && c.UID != "" {
				kept = append(kept, inventory.Released{ID: c.ID, UID: c.UID})
			}
		}
	}
	left, err := r.inv.Release(ctx, inventoryOf(bd), kept, forget)
	if err != nil {
		return fmt.Errorf("recording the objects left in place: %w", err)
	}
	if left > 0 {
		r.Recorder.Eventf(bd, nil, corev1.EventTypeWarning, v1alpha2.ReasonReleaseIncomplete, "Release",
			"%d of the %d objects left in place are not recorded as released (a record holds at most %d): another BundleDeployment cannot take them over without spec.collisionProtection", left, len(kept), len(kept)-left)
	}
	return nil
}

// take is the apply.Collisions Take of bd: through the release record of
// the BundleDeployment an object is labelled for.
func (r *Reconciler) take(bd *v1alpha2.BundleDeployment) func(context.Context, apply.Release) (inventory.TakeVerdict, string, error) {
	taker := inventoryOf(bd)
	return func(ctx context.Context, rel apply.Release) (inventory.TakeVerdict, string, error) {
		verdict, by, err := r.Inventory.Take(ctx, inventory.Owner{Name: rel.Owner, UID: rel.UID}, rel.ID, rel.Object, taker, r.alive)
		return verdict, by.Name, err
	}
}

// alive reports whether BundleDeployment o, with its UID, exists.
func (r *Reconciler) alive(ctx context.Context, o inventory.Owner) (bool, error) {
	bd := &v1alpha2.BundleDeployment{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: o.Name}, bd)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("getting BundleDeployment %s: %w", o.Name, err)
	}
	return bd.UID == o.UID, nil
}

// settle lets go of what bd took from others' release records, as bd is
// deleted: entries of objects its prune (cs) found labelled as its own —
// deleted or left in place, and so released by it in turn — or gone are dropped;
// any other (bd never wrote the object) is released again.
func (r *Reconciler) settle(ctx context.Context, bd *v1alpha2.BundleDeployment, cs *apply.ChangeSet) error {
	took := map[inventory.ID]bool{}
	if cs != nil {
		for _, c := range cs.Entries {
			if c.Action == apply.Deleted || c.Action == apply.Kept {
				took[c.ID.Key()] = true
			}
		}
	}
	if err := r.Inventory.Settle(ctx, inventoryOf(bd), func(id inventory.ID) bool { return took[id.Key()] }); err != nil {
		return fmt.Errorf("letting go of the objects taken over: %w", err)
	}
	return nil
}
