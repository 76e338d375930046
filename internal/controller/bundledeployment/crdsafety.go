package bundledeployment

import (
	"context"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/crdsafety"
	"github.com/rukpak/rukpak/internal/failure"
	"github.com/rukpak/rukpak/internal/inventory"
)

// checkCRDUpgrades refuses a plan that changes an installed CRD unsafely
// (crdsafety.Compare) or whose new schema existing custom resources fail,
// unless upgrade.crdUpgradeSafety is None.
func (r *Reconciler) checkCRDUpgrades(ctx context.Context, s *scope, plan *apply.Plan) error {
	bd := s.bd
	if bd.Spec.Upgrade != nil && bd.Spec.Upgrade.CRDUpgradeSafety == v1alpha2.CRDUpgradeSafetyNone {
		return nil
	}
	var reports []string
	for _, obj := range plan.CRDs() {
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
		if theirs, err := r.refusedAsCollision(ctx, bd, installed); err != nil {
			return err
		} else if theirs {
			// Not this BundleDeployment's to upgrade: the collision check
			// refuses it, naming its owner (the more precise reason).
			continue
		}
		report, err := crdsafety.Check(ctx, s.as.engine.Reader(), installed, next)
		if err != nil {
			return err
		}
		if report != "" {
			reports = append(reports, report)
		}
	}
	if len(reports) > 0 {
		return failure.New(v1alpha2.ReasonCRDUpgradeUnsafe,
			"unsafe CRD upgrade, nothing was applied (set spec.upgrade.crdUpgradeSafety: None to apply anyway): %s", strings.Join(reports, " | "))
	}
	return nil
}

// refusedAsCollision reports whether the apply's collision check will
// refuse the installed CRD: another BundleDeployment holds it, or no
// BundleDeployment manages it and bd's collisionProtection is Prevent.
// Such a CRD is not compared for upgrade safety.
func (r *Reconciler) refusedAsCollision(ctx context.Context, bd *v1alpha2.BundleDeployment, installed *apiextensionsv1.CustomResourceDefinition) (bool, error) {
	labels := installed.GetLabels()
	owner, uid := labels[v1alpha2.LabelOwnerName], types.UID(labels[v1alpha2.LabelOwnerUID])
	if labels[v1alpha2.LabelOwnerKind] != v1alpha2.BundleDeploymentKind || owner == "" {
		return bd.Spec.CollisionProtection == "" || bd.Spec.CollisionProtection == v1alpha2.CollisionProtectionPrevent, nil
	}
	if owner == bd.Name {
		// Its own (or a deleted namesake's, which it may take): checked.
		return false, nil
	}
	id := inventory.ID{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition", Name: installed.Name}
	state, err := r.ownerState(ctx, owner, uid, id)
	if err != nil {
		return false, err
	}
	return state == apply.OwnerHolds, nil
}
