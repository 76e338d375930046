package bundledeployment

import (
	"context"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/crdsafety"
	"github.com/rukpak/rukpak/internal/failure"
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
