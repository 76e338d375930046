package crdsafety

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Lister lists custom resources; a client.Reader reading the API server
// (not a cache) is one.
type Lister interface {
	List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error
}

var _ Lister = client.Reader(nil)

// listVersion calls visit for the existing objects of crd read at version,
// page by page (pageSize objects a request), and stops after max objects.
// It returns how many objects it visited and whether more exist. A CRD or
// version the API server no longer serves has no objects.
func listVersion(ctx context.Context, l Lister, crd *apiextensionsv1.CustomResourceDefinition, version string,
	pageSize int64, maxObjects int, visit func(*unstructured.Unstructured) error) (visited int, more bool, err error) {
	kind := crd.Spec.Names.ListKind
	if kind == "" {
		kind = crd.Spec.Names.Kind + "List"
	}
	cont := ""
	for {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(crd.Spec.Group + "/" + version)
		list.SetKind(kind)
		limit := min(pageSize, int64(maxObjects-visited))
		if err := l.List(ctx, list, client.Limit(limit), client.Continue(cont)); err != nil {
			if apierrors.IsNotFound(err) {
				return visited, false, nil
			}
			return visited, false, fmt.Errorf("listing %s at version %s: %w", crd.Name, version, err)
		}
		for i := range list.Items {
			if visited == maxObjects {
				return visited, true, nil
			}
			visited++
			if err := visit(&list.Items[i]); err != nil {
				return visited, false, err
			}
		}
		cont = list.GetContinue()
		if cont == "" {
			return visited, false, nil
		}
		if visited >= maxObjects {
			return visited, true, nil
		}
	}
}
