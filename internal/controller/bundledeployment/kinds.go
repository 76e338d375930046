package bundledeployment

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// Invalidator is a cache of what the cluster serves (REST mappings,
// discovery answers) that can be told to forget what it knows.
type Invalidator interface {
	// Invalidate forgets what the cache knows: the next question is
	// answered from the API server as it is then.
	Invalidate()
}

// kindSource is a metadata-only object of apiVersion and kind, to watch.
func kindSource(apiVersion, kind string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}}
}

// servedKindsHandler handles the events of CustomResourceDefinitions and
// APIServices (watched metadata-only: an update of their status, which
// makes a kind served or not, changes the resourceVersion a metadata
// watch sees): each creation, update or deletion may change what the
// cluster serves (servedKindsChanged). The initial list's creations, and
// the informer's resyncs, change nothing this process knows.
func (r *Reconciler) servedKindsHandler() handler.Funcs {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if !e.IsInInitialList {
				r.servedKindsChanged(ctx, q)
			}
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if e.ObjectOld.GetResourceVersion() != e.ObjectNew.GetResourceVersion() { // not a resync
				r.servedKindsChanged(ctx, q)
			}
		},
		DeleteFunc: func(ctx context.Context, _ event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.servedKindsChanged(ctx, q)
		},
	}
}

// servedKindsChanged acts on a change of a CustomResourceDefinition or an
// APIService: first every cache of what the cluster serves (KindCaches)
// forgets what it knows, then the BundleDeployments waiting for a kind to
// be served are queued: those whose last reconcile in this process ended
// so (memory.waitForKinds), and those whose status says so
// (Installed=False, UnknownKind: after a restart, before their first
// reconcile ends). The reconciles it queues ask the caches afresh.
func (r *Reconciler) servedKindsChanged(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	r.invalidateKinds()
	for _, name := range r.mem.servedKindsChanged() {
		q.Add(reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
	}
	list := &v1alpha2.BundleDeploymentList{}
	if err := r.Client.List(ctx, list); err != nil {
		return
	}
	for i := range list.Items {
		for _, c := range list.Items[i].Status.Conditions {
			if c.Type == v1alpha2.TypeInstalled && c.Reason == v1alpha2.ReasonUnknownKind {
				q.Add(reconcile.Request{NamespacedName: client.ObjectKey{Name: list.Items[i].Name}})
			}
		}
	}
}

// waitsForKind reports whether the reconcile of s ends waiting for a kind
// to be served: its newest revision failed with UnknownKind, or the drift
// of the installed one could not be corrected for that reason.
func waitsForKind(s *scope) bool {
	return failure.Reason(s.installErr, "") == v1alpha2.ReasonUnknownKind || s.driftErr != nil
}

// invalidateKinds tells every cache of what the cluster serves to forget
// what it knows.
func (r *Reconciler) invalidateKinds() {
	for _, c := range r.KindCaches {
		c.Invalidate()
	}
}
