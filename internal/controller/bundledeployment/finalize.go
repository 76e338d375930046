package bundledeployment

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/inventory"
	"github.com/rukpak/rukpak/internal/ownership"
	"github.com/rukpak/rukpak/pkg/failure"
)

// deletionRecheck is how often a deletion that waits for its install
// identity (a ServiceAccount gone or without the permission) tries again.
const deletionRecheck = 30 * time.Second

// finalize removes everything a BundleDeployment created: its objects (CRDs
// only with deletionPolicy.crds=Delete, and then last; objects its revision
// applied with helm.sh/resource-policy: keep never), its inventory and its
// Bundles, then drops the finalizer. What it leaves in place is released
// (see release.go). Deleting is an explicit request, so it
// proceeds even while the BundleDeployment is paused.
//
// Objects are deleted as the install identity that wrote them, never as the
// manager instead: when that identity is gone (no serviceAccount allowed,
// the ServiceAccount deleted, its permissions revoked) the deletion waits
// and says so (Installed=False, DeletionBlocked, and an event) until the
// ServiceAccount is back or an admin removes the finalizer by hand, which
// leaves the objects in place.
func (r *Reconciler) finalize(ctx context.Context, bd *v1alpha2.BundleDeployment) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(bd, v1alpha2.FinalizerCleanup) {
		return ctrl.Result{}, nil
	}
	ids, err := r.Inventory.Load(ctx, inventoryOf(bd))
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("loading inventory: %w", err)
	}
	var cs *apply.ChangeSet
	if len(ids) > 0 {
		var recs map[inventory.ID]inventory.Record
		if recs, err = r.Inventory.Records(ctx, inventoryOf(bd)); err != nil {
			return ctrl.Result{}, fmt.Errorf("loading inventory: %w", err)
		}
		as, err := r.uninstaller(ctx, bd, len(ids))
		if err == nil {
			cs, err = as.engine.Prune(ctx, bd.Name, ids, apply.PruneOptions{DeleteCRDs: deleteCRDs(bd), Keep: r.keeps(bd.Name, recs), OwnerUID: bd.UID})
			if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
				err = failure.New(v1alpha2.ReasonDeletionBlocked, "deleting the %d object(s) of BundleDeployment %s as %s was refused (%v); it waits until the identity may delete them, and never deletes them as the manager instead; "+
					"restore its permissions, or remove the finalizer %s by hand to leave the objects in place", len(ids), bd.Name, as.id, err, v1alpha2.FinalizerCleanup)
			}
		}
		if failure.As(err) != nil {
			return ctrl.Result{RequeueAfter: deletionRecheck}, r.deletionBlocked(ctx, bd, err)
		}
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("deleting managed objects: %w", err)
		}
	}
	// What it left in place is released (for a BundleDeployment created
	// again, or another one, to take over), and what it took from others
	// is let go, before its inventory is deleted: a crash in between
	// finalizes again, the same way.
	if err := r.release(ctx, bd, cs, nil); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.settle(ctx, bd, cs); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.Inventory.Delete(ctx, inventoryOf(bd)); err != nil {
		return ctrl.Result{}, fmt.Errorf("deleting inventory: %w", err)
	}
	// The BundleDeployments waiting for what it left in place find it
	// released.
	r.handOver(cs, bd.Name)
	r.dropClaims(bd.Name)
	if err := r.deleteBundles(ctx, bd); err != nil {
		return ctrl.Result{}, err
	}
	r.Unpacker.ForgetRevisions(func(rev string) bool { return ownership.IsRevisionName(bd.Name, rev) })
	r.forget(bd.Name)
	patch := client.MergeFrom(bd.DeepCopy())
	controllerutil.RemoveFinalizer(bd, v1alpha2.FinalizerCleanup)
	if err := r.Client.Patch(ctx, bd, patch); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(fmt.Errorf("removing finalizer: %w", err))
	}
	return ctrl.Result{}, nil
}

// uninstaller is who deletes bd's n objects: its install identity, which
// must still be there. A failure with reason DeletionBlocked says why not.
func (r *Reconciler) uninstaller(ctx context.Context, bd *v1alpha2.BundleDeployment, n int) (*actor, error) {
	id, err := r.identityOf(bd)
	if err != nil {
		return nil, failure.New(v1alpha2.ReasonDeletionBlocked, "the %d object(s) of BundleDeployment %s are not deleted: it has no install identity (%v); rukpak never deletes them as the manager instead; "+
			"name the ServiceAccount that installed them, or remove the finalizer %s by hand to leave them in place", n, bd.Name, err, v1alpha2.FinalizerCleanup)
	}
	if !id.IsManager() && r.APIReader != nil {
		sa := &corev1.ServiceAccount{}
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: id.Namespace, Name: id.Name}, sa)
		if apierrors.IsNotFound(err) {
			return nil, failure.New(v1alpha2.ReasonDeletionBlocked, "the %d object(s) of BundleDeployment %s are not deleted: ServiceAccount %s/%s, which installed them, is gone; rukpak never deletes them as the manager instead; "+
				"create the ServiceAccount again (with its permissions), or remove the finalizer %s by hand to leave the objects in place", n, bd.Name, id.Namespace, id.Name, v1alpha2.FinalizerCleanup)
		}
		if err != nil {
			return nil, fmt.Errorf("getting ServiceAccount %s/%s: %w", id.Namespace, id.Name, err)
		}
	}
	as, err := r.actorFor(id)
	if err != nil {
		return nil, err
	}
	r.useIdentity(bd.Name, id)
	return as, nil
}

// deletionBlocked reports why a deletion waits, in the Installed condition
// and an event.
func (r *Reconciler) deletionBlocked(ctx context.Context, bd *v1alpha2.BundleDeployment, why error) error {
	r.Recorder.Eventf(bd, nil, corev1.EventTypeWarning, v1alpha2.ReasonDeletionBlocked, "Delete", "%v", why)
	base := bd.DeepCopy()
	setCondition(bd, metav1.Condition{Type: v1alpha2.TypeInstalled, Status: metav1.ConditionFalse, Reason: v1alpha2.ReasonDeletionBlocked, Message: why.Error()})
	if err := r.Client.Status().Patch(ctx, bd, client.MergeFrom(base)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patching status: %w", err)
	}
	return nil
}

// deleteBundles deletes the Bundles bd controls (by UID); a Bundle only
// labelled for it is someone else's and stays.
func (r *Reconciler) deleteBundles(ctx context.Context, bd *v1alpha2.BundleDeployment) error {
	bundles, err := r.bundlesLabelled(ctx, bd.Name)
	if err != nil {
		return err
	}
	for i := range bundles {
		b := &bundles[i]
		if !ownership.Controlled(bd, b) || !b.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.Client.Delete(ctx, b, client.Preconditions{UID: &b.UID}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting Bundle %s: %w", b.Name, err)
		}
	}
	return nil
}
