package apply

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// EnsureNamespace creates the namespace name unless it exists. The
// namespace is not labelled as managed: it is never pruned. Existence is
// read through the Engine's client, which may be a cache (of namespace
// metadata): a namespace deleted a moment ago fails the dry-run instead.
func (e *Engine) EnsureNamespace(ctx context.Context, name string) error {
	err := e.c.Get(ctx, client.ObjectKey{Name: name}, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}})
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("getting namespace %s: %w", name, err)
	}
	err = e.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}
