package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Helm's hook annotations, read to decide whether a hook may be replaced.
const (
	helmHook             = "helm.sh/hook"
	helmHookDeletePolicy = "helm.sh/hook-delete-policy"
	// beforeHookCreation is Helm's default delete policy for hooks: the
	// previous hook object is deleted before a new one is created.
	beforeHookCreation = "before-hook-creation"
)

// replaceTimeout bounds the wait for a replaced object to be gone.
const replaceTimeout = 2 * time.Minute

// immutableFields returns the fields an Invalid error says cannot change
// ("field is immutable"), or nil when err is not about those.
func immutableFields(err error) []string {
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return nil
	}
	var fields []string
	for _, c := range status.Status().Details.Causes {
		if strings.Contains(c.Message, "immutable") {
			fields = append(fields, c.Field)
		}
	}
	return fields
}

// replaceable reports whether it's object may be deleted and created again
// when a change to an immutable field is refused: it is annotated
// Keys.ReplaceOnImmutable "true", or it is a Helm hook whose
// delete policy is before-hook-creation (Helm's default).
func (e *Engine) replaceable(it item) bool {
	ann := it.obj.GetAnnotations()
	if ann[e.opts.Keys.ReplaceOnImmutable] == "true" {
		return true
	}
	if _, hook := ann[helmHook]; !hook {
		return false
	}
	policy, set := ann[helmHookDeletePolicy]
	if !set {
		return true
	}
	for _, p := range strings.Split(policy, ",") {
		if strings.TrimSpace(p) == beforeHookCreation {
			return true
		}
	}
	return false
}

// immutableRefusal says why it cannot be applied: fields of it that cannot
// change, and how to let the engine replace it.
func (e *Engine) immutableRefusal(it item, fields []string) string {
	return fmt.Sprintf("object %s: field(s) %s cannot change once it exists; annotate it %s: \"true\" to have rukpak delete and re-create it",
		it.id, strings.Join(fields, ", "), e.opts.Keys.ReplaceOnImmutable)
}

// replace deletes it's object and waits until it is gone, so that the
// next apply creates it afresh. Its dependents (a Job's Pods) are removed
// by the garbage collector in the background, as Helm leaves them.
func (e *Engine) replace(ctx context.Context, it item) error {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(it.id.GroupVersionKind())
	obj.SetNamespace(it.id.Namespace)
	obj.SetName(it.id.Name)
	background := metav1.DeletePropagationBackground
	if err := e.c.Delete(ctx, obj, &client.DeleteOptions{PropagationPolicy: &background}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting %s to re-create it: %w", it.id, err)
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, replaceTimeout, true, func(ctx context.Context) (bool, error) {
		cur := &metav1.PartialObjectMetadata{}
		cur.SetGroupVersionKind(it.id.GroupVersionKind())
		err := e.live().Get(ctx, client.ObjectKey{Namespace: it.id.Namespace, Name: it.id.Name}, cur)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		return fmt.Errorf("waiting for %s to be deleted before it is re-created: %w", it.id, err)
	}
	return nil
}
