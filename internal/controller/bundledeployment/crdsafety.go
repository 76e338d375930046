package bundledeployment

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/crdsafety"
	"github.com/rukpak/rukpak/internal/inventory"
	"github.com/rukpak/rukpak/pkg/failure"
)

// checkCRDUpgrades refuses a plan whose change of an installed CRD breaks
// what exists (crdsafety.Check: custom resources the new schema refuses
// or prunes, a stored version removed, a served version dropped while
// objects exist), unless upgrade.crdUpgradeSafety is None or the user
// accepted each such finding in upgrade.acceptedCRDFindings.
func (r *Reconciler) checkCRDUpgrades(ctx context.Context, s *scope, plan *apply.Plan, same map[inventory.ID]appliedObject) error {
	bd := s.bd
	if bd.Spec.Upgrade != nil && bd.Spec.Upgrade.CRDUpgradeSafety == v1alpha2.CRDUpgradeSafetyNone {
		return nil
	}
	lister := customResourceLister{manager: r.Engine.Reader()}
	if !s.as.id.IsManager() {
		lister.install = s.as.engine.Reader()
	}
	var reports []string
	for _, obj := range plan.CRDs() {
		gvk := obj.GroupVersionKind()
		if _, ok := same[inventory.ID{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Name: obj.GetName()}]; ok {
			// Applied before exactly so, and not changed since: nothing
			// changes, so nothing to check (nor its custom resources to
			// list).
			continue
		}
		next := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, next); err != nil {
			return failure.New(v1alpha2.ReasonInvalidContent, "CRD %s: %v", obj.GetName(), err)
		}
		installed := &apiextensionsv1.CustomResourceDefinition{}
		err := s.as.engine.Reader().Get(ctx, client.ObjectKey{Name: next.Name}, installed)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("getting installed CRD %s: %w", next.Name, err)
		}
		if theirs, err := r.refusedAsCollision(ctx, s, installed); err != nil {
			return err
		} else if theirs {
			// Not this BundleDeployment's to upgrade: the collision check
			// refuses it, naming its owner (the more precise reason).
			continue
		}
		opts := crdsafety.DefaultOptions()
		opts.Accepted = bd.Spec.Upgrade.AcceptedFindings(next.Name)
		res, err := crdsafety.Check(ctx, lister, installed, next, opts)
		if err != nil {
			return err
		}
		if !res.Safe() {
			reports = append(reports, res.Message())
		} else if len(res.Accepted) > 0 {
			log.FromContext(ctx).Info("CRD upgrade allowed by accepted findings", "crd", next.Name, "findings", findingIDs(res.Accepted))
		}
	}
	if len(reports) > 0 {
		return failure.New(v1alpha2.ReasonCRDUpgradeUnsafe,
			"unsafe CRD upgrade, nothing was applied (to apply anyway, accept each finding by its bracketed id in "+
				"spec.upgrade.acceptedCRDFindings as {crd: NAME, finding: ID}, or set spec.upgrade.crdUpgradeSafety: None to skip every check): %s",
			strings.Join(reports, " | "))
	}
	return nil
}

// findingIDs are the IDs of findings, for logs.
func findingIDs(findings []crdsafety.Finding) []string {
	out := make([]string, 0, len(findings))
	for _, f := range findings {
		out = append(out, f.ID())
	}
	return out
}

// refusedAsCollision reports whether the apply's collision check (see
// apply.Collisions) will certainly refuse the installed CRD: it is not in
// bd's inventory nor in what bd last applied, and another BundleDeployment
// manages it (or takes it over from the one that released it), or no live
// BundleDeployment manages it, none released it, and bd's
// collisionProtection does not adopt it. Such a CRD is not compared for
// upgrade safety; in any doubt it is.
func (r *Reconciler) refusedAsCollision(ctx context.Context, s *scope, installed *apiextensionsv1.CustomResourceDefinition) (bool, error) {
	bd := s.bd
	id := inventory.ID{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition", Name: installed.Name}
	if st := s.mem.applied; st != nil {
		if _, ok := r.mem.lookup(st, id); ok {
			return false, nil
		}
	}
	own, err := r.Inventory.Load(ctx, inventoryOf(bd))
	if err != nil {
		return false, fmt.Errorf("loading inventory: %w", err)
	}
	key := id.Key()
	if slices.ContainsFunc(own, func(x inventory.ID) bool { return x.Key() == key }) {
		return false, nil
	}
	labels := installed.GetLabels()
	owner, uid := labels[v1alpha2.LabelOwnerName], types.UID(labels[v1alpha2.LabelOwnerUID])
	if labels[v1alpha2.LabelOwnerKind] == v1alpha2.BundleDeploymentKind && owner != "" {
		if owner == bd.Name && uid != "" && uid == bd.UID {
			return false, nil
		}
		if owner != bd.Name {
			// (One of bd's name but another UID was left by a deleted
			// BundleDeployment of the same name.)
			state, err := r.ownerState(ctx, owner, uid, id)
			if err != nil || state == apply.OwnerHolds {
				return state == apply.OwnerHolds, err
			}
		}
		// Its owner no longer has it: taken over when it released it
		// (a reinstall takes back a CRD it left in place on delete, and upgrades it).
		verdict, _, err := r.Inventory.Peek(ctx, inventory.Owner{Name: owner, UID: uid}, id, installed.UID, inventoryOf(bd), r.alive)
		if err != nil || verdict != inventory.NotReleased {
			return verdict == inventory.TakenByOther, err
		}
	}
	switch bd.Spec.CollisionProtection {
	case v1alpha2.CollisionProtectionNone:
		return false, nil
	case v1alpha2.CollisionProtectionIfNoController:
		return metav1.GetControllerOfNoCopy(installed) != nil, nil
	}
	return true, nil
}
