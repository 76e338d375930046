package crdsafety

import (
	"context"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MaxReportedObjects is how many existing custom resources a Check names.
const MaxReportedObjects = 5

// Check is the whole upgrade-safety check of replacing the installed CRD
// oldCRD with newCRD: Compare, the existing custom resources (read through
// r at the storage version) validated against the new schema, and those
// holding values in fields the new schema removes. It returns Report's
// message, "" when the change is safe.
func Check(ctx context.Context, r client.Reader, oldCRD, newCRD *apiextensionsv1.CustomResourceDefinition) (string, error) {
	findings := Compare(oldCRD, newCRD)
	existing, err := ListExisting(ctx, r, oldCRD)
	if err != nil {
		return "", err
	}
	failures, err := ValidateExisting(newCRD, existing, MaxReportedObjects)
	if err != nil {
		return "", fmt.Errorf("validating existing %s against the new schema: %w", newCRD.Name, err)
	}
	report := Report(newCRD.Name, findings, failures)
	if pruned := prunedValues(oldCRD, findings, existing, MaxReportedObjects); report != "" && len(pruned) > 0 {
		report += "; " + strings.Join(pruned, "; ")
	}
	return report, nil
}

// ListExisting lists every object of crd, read at its storage version.
func ListExisting(ctx context.Context, r client.Reader, crd *apiextensionsv1.CustomResourceDefinition) ([]unstructured.Unstructured, error) {
	version := storageVersion(crd)
	if version == "" {
		return nil, nil
	}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(crd.Spec.Group + "/" + version)
	list.SetKind(crd.Spec.Names.ListKind)
	if list.GetKind() == "" {
		list.SetKind(crd.Spec.Names.Kind + "List")
	}
	if err := r.List(ctx, list); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing %s: %w", crd.Name, err)
	}
	return list.Items, nil
}
