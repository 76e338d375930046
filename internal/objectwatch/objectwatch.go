// Package objectwatch keeps metadata-only watches of the objects
// BundleDeployments manage, one per identity, resource and namespace, shared
// by the BundleDeployments that need it and stopped when the last of them
// lets go. A watch made as a ServiceAccount needs only what that
// ServiceAccount may list: the namespaces its objects are in, and cluster
// scope only for cluster-scoped kinds.
package objectwatch

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/rukpak/rukpak/internal/identity"
)

// Key names one watch: an identity's view of one resource in one namespace
// ("" watches all namespaces, or a cluster-scoped resource).
type Key struct {
	Identity  identity.Identity
	Resource  schema.GroupVersionResource
	Kind      schema.GroupVersionKind
	Namespace string
}

// Handler is told of every change a watch sees: obj is the object after
// (or, for a deletion, before) the change, old the one before an update
// (nil otherwise).
type Handler func(kind schema.GroupVersionKind, obj, old *metav1.PartialObjectMetadata, deleted bool)

// Clients returns the metadata client acting as an identity.
type Clients func(identity.Identity) (metadata.Interface, error)

// Watcher holds the watches.
type Watcher struct {
	ctx      context.Context
	selector string
	clients  Clients
	handle   Handler

	mu      sync.Mutex
	watches map[Key]*entry
	owners  map[string]map[Key]bool
}

type entry struct {
	store  cache.Store
	synced func() bool
	stop   context.CancelFunc
	owners map[string]bool
}

// New returns a Watcher whose watches select objects by the label selector
// and run until ctx is done.
func New(ctx context.Context, selector string, clients Clients, handle Handler) *Watcher {
	return &Watcher{ctx: ctx, selector: selector, clients: clients, handle: handle,
		watches: map[Key]*entry{}, owners: map[string]map[Key]bool{}}
}

// Ensure makes owner's watches exactly keys: it starts the ones no owner
// had, and lets go of those owner no longer needs (stopping any that no
// owner needs now).
func (w *Watcher) Ensure(owner string, keys []Key) error {
	want := make(map[Key]bool, len(keys))
	for _, k := range keys {
		want[k] = true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	held := map[Key]bool{}
	for k := range w.owners[owner] {
		held[k] = true
	}
	// Recorded as they are taken, so that a failure half-way leaves what
	// owner holds known (and released later).
	w.owners[owner] = held
	var err error
	for k := range want {
		if held[k] {
			continue
		}
		e, ok := w.watches[k]
		if !ok {
			var serr error
			if e, serr = w.start(k); serr != nil {
				err = serr
				continue
			}
			w.watches[k] = e
		}
		e.owners[owner] = true
		held[k] = true
	}
	for k := range held {
		if !want[k] {
			w.release(owner, k)
			delete(held, k)
		}
	}
	if len(held) == 0 {
		delete(w.owners, owner)
	}
	return err
}

// Release lets go of all of owner's watches.
func (w *Watcher) Release(owner string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k := range w.owners[owner] {
		w.release(owner, k)
	}
	delete(w.owners, owner)
}

// Len is how many watches run.
func (w *Watcher) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.watches)
}

// Get returns the object named namespace/name as the watch of key last saw
// it; ok is false when the watch does not run, has not synced, or does not
// hold the object.
func (w *Watcher) Get(key Key, namespace, name string) (obj *metav1.PartialObjectMetadata, ok bool) {
	w.mu.Lock()
	e := w.watches[key]
	w.mu.Unlock()
	if e == nil || !e.synced() {
		return nil, false
	}
	storeKey := name
	if namespace != "" {
		storeKey = namespace + "/" + name
	}
	item, exists, err := e.store.GetByKey(storeKey)
	if err != nil || !exists {
		return nil, false
	}
	obj, ok = item.(*metav1.PartialObjectMetadata)
	return obj, ok
}

// release drops owner from k's watch, stopping it when no owner is left.
// The caller holds w.mu.
func (w *Watcher) release(owner string, k Key) {
	e, ok := w.watches[k]
	if !ok {
		return
	}
	delete(e.owners, owner)
	if len(e.owners) == 0 {
		e.stop()
		delete(w.watches, k)
	}
}

// start runs a watch of k. The caller holds w.mu.
func (w *Watcher) start(k Key) (*entry, error) {
	md, err := w.clients(k.Identity)
	if err != nil {
		return nil, fmt.Errorf("watching %s as %s: %w", k.Resource, k.Identity, err)
	}
	ri := md.Resource(k.Resource)
	var res metadata.ResourceInterface = ri
	if k.Namespace != "" {
		res = ri.Namespace(k.Namespace)
	}
	selector := w.selector
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.LabelSelector = selector
			return res.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = selector
			return res.Watch(ctx, opts)
		},
	}
	kind := k.Kind
	// A plain informer, not a shared one: the handler runs on the
	// informer's own loop, without the shared informer's listener
	// goroutines and buffers, which would cost more than the watch of a
	// few objects does.
	store, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw,
		ObjectType:    &metav1.PartialObjectMetadata{},
		Transform:     crcache.TransformStripManagedFields(),
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) {
				if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
					w.handle(kind, m, nil, false)
				}
			},
			UpdateFunc: func(oldObj, newObj any) {
				o, _ := oldObj.(*metav1.PartialObjectMetadata)
				if m, ok := newObj.(*metav1.PartialObjectMetadata); ok {
					w.handle(kind, m, o, false)
				}
			},
			DeleteFunc: func(obj any) {
				if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = t.Obj
				}
				if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
					w.handle(kind, m, nil, true)
				}
			},
		},
	})
	ctx, cancel := context.WithCancel(w.ctx)
	go ctrl.RunWithContext(ctx)
	return &entry{store: store, synced: ctrl.HasSynced, stop: cancel, owners: map[string]bool{}}, nil
}
