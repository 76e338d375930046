package bundledeployment

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// The backoff of retries of a revision that failed for a reason the world
// can fix (failure.Retry): the first after retryBase, doubled at every
// retry up to retryMax.
const (
	retryBase = time.Second
	retryMax  = 2 * time.Minute
)

// retryKey names the retries of one revision of a BundleDeployment (see
// memory.retries).
type retryKey struct {
	name, revision string
}

// waitingForKinds returns the BundleDeployments whose newest revision
// waits for a kind to be served (Installed=False, UnknownKind): a CRD or
// APIService that changed may be the one they need.
func (r *Reconciler) waitingForKinds(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &v1alpha2.BundleDeploymentList{}
	if err := r.Client.List(ctx, list); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		for _, c := range list.Items[i].Status.Conditions {
			if c.Type == v1alpha2.TypeInstalled && c.Reason == v1alpha2.ReasonUnknownKind {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Name: list.Items[i].Name}})
			}
		}
	}
	return reqs
}

// kindSource is a metadata-only object of apiVersion and kind, to watch.
func kindSource(apiVersion, kind string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}}
}

// servedKindsChanged passes creations and updates of CRDs and APIServices
// (an update of their status, which makes a kind served, changes the
// resourceVersion a metadata watch sees), not the initial list's or
// deletions.
var servedKindsChanged = predicate.Funcs{
	CreateFunc:  func(e event.CreateEvent) bool { return !e.IsInInitialList },
	UpdateFunc:  func(event.UpdateEvent) bool { return true },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}
