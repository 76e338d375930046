package bundledeployment

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/identity"
)

// finalize removes everything a BundleDeployment created: its objects (CRDs
// only with deletionPolicy.crds=Delete, and then last), its inventory and its
// Bundles, then drops the finalizer. Deleting is an explicit request, so it
// proceeds even while the BundleDeployment is paused.
func (r *Reconciler) finalize(ctx context.Context, bd *v1alpha2.BundleDeployment) error {
	if !controllerutil.ContainsFinalizer(bd, v1alpha2.FinalizerCleanup) {
		return nil
	}
	ids, err := r.Inventory.Load(ctx, bd.Name)
	if err != nil {
		return fmt.Errorf("loading inventory: %w", err)
	}
	// Deleted as the install identity, as they were written; a
	// BundleDeployment that never had one (refused before installing
	// anything, so its inventory is empty) falls back to the manager.
	id, err := r.identityOf(bd)
	if err != nil {
		id = identity.Manager
	}
	as, err := r.actorFor(id)
	if err != nil {
		return err
	}
	r.useIdentity(bd.Name, id)
	cs, err := as.engine.Prune(ctx, bd.Name, ids, apply.PruneOptions{DeleteCRDs: deleteCRDs(bd), Keep: r.claimedByOther(bd.Name)})
	if err != nil {
		return fmt.Errorf("deleting managed objects: %w", err)
	}
	if err := r.Inventory.Delete(ctx, bd.Name); err != nil {
		return fmt.Errorf("deleting inventory: %w", err)
	}
	r.handOver(cs, bd.Name)
	r.dropClaims(bd.Name)
	if err := r.Client.DeleteAllOf(ctx, &v1alpha2.Bundle{}, client.MatchingLabels{v1alpha2.LabelBundleDeployment: bd.Name}); err != nil {
		return fmt.Errorf("deleting Bundles: %w", err)
	}
	r.forget(bd.Name)
	patch := client.MergeFrom(bd.DeepCopy())
	controllerutil.RemoveFinalizer(bd, v1alpha2.FinalizerCleanup)
	if err := r.Client.Patch(ctx, bd, patch); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("removing finalizer: %w", err))
	}
	return nil
}
