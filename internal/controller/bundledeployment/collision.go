package bundledeployment

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/inventory"
)

// collisions are the collision rules of an install of s: objects the last
// successful install applied are the BundleDeployment's own; anything else
// that exists is checked (see apply.Collisions). An object refused because
// another BundleDeployment manages it is recorded as claimed, so that the
// other hands it over instead of deleting it when it drops it.
func (r *Reconciler) collisions(s *scope, st *appliedState) *apply.Collisions {
	owned := map[inventory.ID]bool{}
	if st != nil {
		for _, id := range st.ids {
			owned[id.Key()] = true
		}
	}
	claimant := s.bd.Name
	return &apply.Collisions{
		Policy:   s.bd.Spec.CollisionProtection,
		Owned:    owned,
		Released: r.released,
		Blocked: func(_ string, id inventory.ID) {
			r.mu.Lock()
			r.claims[id.Key()] = claimant
			s.waitingForHandOff = true
			r.mu.Unlock()
		},
	}
}

// released reports whether BundleDeployment other's installed revision no
// longer has id: its inventory (saved after every successful install and
// prune) is the record.
func (r *Reconciler) released(ctx context.Context, other string, id inventory.ID) (bool, error) {
	ids, err := r.Inventory.Load(ctx, other)
	if err != nil {
		return false, fmt.Errorf("loading the inventory of BundleDeployment %s: %w", other, err)
	}
	key := id.Key()
	return !slices.ContainsFunc(ids, func(x inventory.ID) bool { return x.Key() == key }), nil
}

// claimedByOther reports whether a BundleDeployment other than owner waits
// for the object id.
func (r *Reconciler) claimedByOther(owner string) func(inventory.ID) bool {
	return func(id inventory.ID) bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		c, ok := r.claims[id.Key()]
		return ok && c != owner
	}
}

// handOver wakes the BundleDeployments waiting for the kept objects of a
// prune, after the owner's inventory no longer has them.
func (r *Reconciler) handOver(cs *apply.ChangeSet, owner string) {
	if cs == nil {
		return
	}
	var wake []string
	r.mu.Lock()
	for _, c := range cs.Entries {
		if c.Action != apply.Skipped {
			continue
		}
		if claimant, ok := r.claims[c.ID.Key()]; ok && claimant != owner {
			delete(r.claims, c.ID.Key())
			wake = append(wake, claimant)
		}
	}
	r.mu.Unlock()
	for _, name := range wake {
		bd := &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: name}}
		select {
		case r.wake <- event.GenericEvent{Object: bd}:
		default: // the queue is flooded; the claimant's own retry will do
		}
	}
}

// dropClaims forgets the claims of BundleDeployment name (it was deleted).
func (r *Reconciler) dropClaims(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, c := range r.claims {
		if c == name {
			delete(r.claims, id)
		}
	}
}
