package bundledeployment

import (
	"context"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/crdsafety"
	"github.com/rukpak/rukpak/internal/failure"
)

// maxReportedObjects is how many existing custom resources failing a new
// schema are named.
const maxReportedObjects = 5

// checkCRDUpgrades refuses a plan that changes an installed CRD unsafely
// (crdsafety.Compare) or whose new schema existing custom resources fail,
// unless upgrade.crdUpgradeSafety is None.
func (r *Reconciler) checkCRDUpgrades(ctx context.Context, bd *v1alpha2.BundleDeployment, plan *apply.Plan) error {
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
		err := r.Live.Get(ctx, client.ObjectKey{Name: next.Name}, installed)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("getting installed CRD %s: %w", next.Name, err)
		}
		findings := crdsafety.Compare(installed, next)
		existing, err := r.customResources(ctx, installed)
		if err != nil {
			return err
		}
		failures, err := crdsafety.ValidateExisting(next, existing, maxReportedObjects)
		if err != nil {
			return fmt.Errorf("validating existing %s against the new schema: %w", next.Name, err)
		}
		if report := crdsafety.Report(next.Name, findings, failures); report != "" {
			reports = append(reports, report)
		}
	}
	if len(reports) > 0 {
		return failure.New(v1alpha2.ReasonCRDUpgradeUnsafe,
			"unsafe CRD upgrade, nothing was applied (set spec.upgrade.crdUpgradeSafety: None to apply anyway): %s", strings.Join(reports, " | "))
	}
	return nil
}

// customResources lists every object of crd, read at its storage version.
func (r *Reconciler) customResources(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) ([]unstructured.Unstructured, error) {
	version := ""
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			version = v.Name
		}
	}
	if version == "" {
		return nil, nil
	}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(crd.Spec.Group + "/" + version)
	list.SetKind(crd.Spec.Names.ListKind)
	if list.GetKind() == "" {
		list.SetKind(crd.Spec.Names.Kind + "List")
	}
	if err := r.Live.List(ctx, list); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing %s: %w", crd.Name, err)
	}
	return list.Items, nil
}
