package bundledeployment

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/inventory"
)

// driftWatches starts one metadata-only watch per kind of managed object,
// on a cache that only holds objects carrying the owner label. An event that
// shows drift (not the echo of rukpak's own write, nor a change only to what
// others own) enqueues the owning BundleDeployment, which then re-applies
// what changed.
type driftWatches struct {
	cache cache.Cache
	ctrl  controller.Controller
	// unchanged reports that an event shows no drift (see
	// appliedObject.drifted).
	unchanged func(schema.GroupVersionKind, client.Object) bool

	mu      sync.Mutex
	watched map[schema.GroupVersionKind]bool
}

func newDriftWatches(c cache.Cache, ctrl controller.Controller, unchanged func(schema.GroupVersionKind, client.Object) bool) *driftWatches {
	return &driftWatches{cache: c, ctrl: ctrl, unchanged: unchanged, watched: map[schema.GroupVersionKind]bool{}}
}

// ensure watches the kinds of ids.
func (d *driftWatches) ensure(_ context.Context, ids []inventory.ID) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, id := range ids {
		gvk := schema.GroupVersionKind{Group: id.Group, Version: id.Version, Kind: id.Kind}
		if d.watched[gvk] {
			continue
		}
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(gvk)
		if err := d.ctrl.Watch(source.Kind[*metav1.PartialObjectMetadata](d.cache, obj, d.handler(gvk))); err != nil {
			return fmt.Errorf("watching %s: %w", gvk, err)
		}
		d.watched[gvk] = true
	}
	return nil
}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func (d *driftWatches) handler(gvk schema.GroupVersionKind) handler.TypedEventHandler[*metav1.PartialObjectMetadata, reconcile.Request] {
	enqueue := func(obj *metav1.PartialObjectMetadata, q queue) {
		if name := obj.GetLabels()[v1alpha2.LabelOwnerName]; name != "" {
			q.Add(reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
		}
	}
	return handler.TypedFuncs[*metav1.PartialObjectMetadata, reconcile.Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[*metav1.PartialObjectMetadata], q queue) {
			if !d.unchanged(gvk, e.Object) {
				enqueue(e.Object, q)
			}
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[*metav1.PartialObjectMetadata], q queue) {
			if !d.unchanged(gvk, e.ObjectNew) {
				enqueue(e.ObjectNew, q)
				// The owner label itself may have been removed or changed.
				if e.ObjectOld.GetLabels()[v1alpha2.LabelOwnerName] != e.ObjectNew.GetLabels()[v1alpha2.LabelOwnerName] {
					enqueue(e.ObjectOld, q)
				}
			}
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[*metav1.PartialObjectMetadata], q queue) {
			enqueue(e.Object, q)
		},
	}
}
