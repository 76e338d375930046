package review

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// readerLive is Live over a controller-runtime reader.
type readerLive struct {
	reader client.Reader
}

var _ Live = readerLive{}

// FromReader returns Live reading through r, for example the manager's
// API reader (uncached: Compute lists ClusterRoles and, when a role
// changes, every RoleBinding and ClusterRoleBinding; a cached client
// would start informers for them).
func FromReader(r client.Reader) Live { return readerLive{reader: r} }

// Get implements Live.
func (l readerLive) Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	err := l.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("getting %s %s/%s: %w", gvk.Kind, namespace, name, err)
	}
	return u, nil
}

// List implements Live.
func (l readerLive) List(ctx context.Context, gvk schema.GroupVersionKind) ([]*unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := l.reader.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing %s: %w", gvk.Kind, err)
	}
	out := make([]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}
