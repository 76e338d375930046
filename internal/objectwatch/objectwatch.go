// Package objectwatch keeps metadata-only watches of the objects
// BundleDeployments manage: one per resource and namespace, shared by
// every BundleDeployment that needs it whatever identity it installs as,
// and stopped when the last of them lets go.
//
// A watch runs as one of its owners' identities (its carrier). A
// ServiceAccount needs only what it may list: the namespaces its objects
// are in, and cluster scope only for cluster-scoped kinds; the permission
// preflight has checked that each owner's identity may list and watch
// what it installs. When the carrier's last owner lets go, or the API
// server refuses the carrier its list or watch, the watch starts again as
// another owner's identity. Sharing tells a tenant nothing: a watch only
// tells the manager which managed objects changed, and each
// BundleDeployment then reads and writes its own objects as its own
// identity. It keeps the manager's memory in proportion to the objects it
// manages, not to objects times identities: a thousand ServiceAccounts
// installing into one namespace share one watch.
package objectwatch

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/rukpak/rukpak/internal/identity"
)

// Key names what an owner needs watched: one resource in one namespace
// ("" watches all namespaces, or a cluster-scoped resource), as an
// identity. Keys that differ only in their identity share one watch.
type Key struct {
	Identity  identity.Identity
	Resource  schema.GroupVersionResource
	Kind      schema.GroupVersionKind
	Namespace string
}

// scope is a Key without its identity: what one watch covers.
type scope struct {
	resource  schema.GroupVersionResource
	kind      schema.GroupVersionKind
	namespace string
}

func (k Key) scope() scope {
	return scope{resource: k.Resource, kind: k.Kind, namespace: k.Namespace}
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
	watches map[scope]*entry
	owners  map[string]map[Key]bool
}

// entry is one running watch.
type entry struct {
	// owners are the owners and the identity each needs it as.
	owners map[string]identity.Identity
	// carrier is the identity the watch runs as; refused those the API
	// server refused it as.
	carrier identity.Identity
	refused map[identity.Identity]bool
	// run is the informer of the current carrier.
	run *informer
}

// informer is one run of a watch as one identity.
type informer struct {
	store  cache.Store
	synced func() bool
	stop   context.CancelFunc
	// done is closed when the run stops.
	done <-chan struct{}
	// failing is whether its last list failed (Await waits no longer).
	failing atomic.Bool
}

// New returns a Watcher whose watches select objects by the label selector
// and run until ctx is done.
func New(ctx context.Context, selector string, clients Clients, handle Handler) *Watcher {
	return &Watcher{ctx: ctx, selector: selector, clients: clients, handle: handle,
		watches: map[scope]*entry{}, owners: map[string]map[Key]bool{}}
}

// Ensure makes owner's watches exactly keys: it joins or starts the
// watches keys need, and lets go of those owner no longer needs (stopping
// any that no owner needs now).
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
	// Let go first, so that a key whose identity changed moves the owner
	// to its new identity in the same watch.
	for k := range held {
		if !want[k] {
			w.release(owner, k)
			delete(held, k)
		}
	}
	// Recorded as they are taken, so that a failure half-way leaves what
	// owner holds known (and released later).
	w.owners[owner] = held
	return w.join(owner, keys, held)
}

// join joins owner to, or starts, the watches of keys owner does not hold
// yet, recording them in held (w.owners[owner]). The caller holds w.mu.
func (w *Watcher) join(owner string, keys []Key, held map[Key]bool) error {
	var err error
	for _, k := range keys {
		if held[k] {
			continue
		}
		e, ok := w.watches[k.scope()]
		if !ok {
			e = &entry{owners: map[string]identity.Identity{}, carrier: k.Identity, refused: map[identity.Identity]bool{}}
			run, serr := w.start(k.scope(), k.Identity, nil)
			if serr != nil {
				err = serr
				continue
			}
			e.run = run
			w.watches[k.scope()] = e
		}
		e.owners[owner] = k.Identity
		held[k] = true
		// A watch refused as its carrier moves to an identity that may
		// do better.
		if e.refused[e.carrier] && !e.refused[k.Identity] {
			w.carry(k.scope(), e, k.Identity)
		}
	}
	if len(held) == 0 {
		delete(w.owners, owner)
	}
	return err
}

// syncPoll is how often Await looks whether the watches it waits for
// have synced.
const syncPoll = 20 * time.Millisecond

// Await joins owner to the watches keys need, letting go of none (Ensure
// makes them exact later), and waits until each of them answers Get for
// its key, or fails to: it has synced, or the API server refused it as
// the key's identity or failed its last list (the caller then reads the
// API server).
// It returns ctx's error when ctx is done first. What it waits for is a watch's
// first list: after a restart, or for a kind no owner watched before,
// what the watch would have shown is read from the API server otherwise,
// one request per object.
func (w *Watcher) Await(ctx context.Context, owner string, keys []Key) error {
	w.mu.Lock()
	held := w.owners[owner]
	if held == nil {
		held = map[Key]bool{}
		w.owners[owner] = held
	}
	err := w.join(owner, keys, held)
	w.mu.Unlock()
	if err != nil {
		return err
	}
	t := time.NewTicker(syncPoll)
	defer t.Stop()
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("waiting for the watches of %s to sync: %w", owner, err)
		}
		if w.answers(keys) {
			return nil
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}

// answers reports whether the watch of each of keys has synced or was
// refused as the key's identity.
func (w *Watcher) answers(keys []Key) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range keys {
		e := w.watches[k.scope()]
		if e == nil || e.refused[k.Identity] || e.run.failing.Load() {
			continue
		}
		if !e.run.synced() {
			return false
		}
	}
	return true
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

// Get returns the object named namespace/name as the watch of key's scope
// last saw it; ok is false when no owner needs that watch as key's
// identity, the API server refused the watch as that identity, or the
// watch has not synced or does not hold the object.
func (w *Watcher) Get(key Key, namespace, name string) (obj *metav1.PartialObjectMetadata, ok bool) {
	w.mu.Lock()
	e := w.watches[key.scope()]
	var run *informer
	if e != nil && e.needs(key.Identity) && !e.refused[key.Identity] {
		run = e.run
	}
	w.mu.Unlock()
	if run == nil || !run.synced() {
		return nil, false
	}
	storeKey := name
	if namespace != "" {
		storeKey = namespace + "/" + name
	}
	item, exists, err := run.store.GetByKey(storeKey)
	if err != nil || !exists {
		return nil, false
	}
	obj, ok = item.(*metav1.PartialObjectMetadata)
	return obj, ok
}

// needs tells whether an owner needs the watch as id.
func (e *entry) needs(id identity.Identity) bool {
	for _, have := range e.owners {
		if have == id {
			return true
		}
	}
	return false
}

// next returns the identity the watch should run as after its carrier:
// the manager's if an owner needs it, else the first by name of those the
// API server has not refused; ok is false when there is none.
func (e *entry) next() (id identity.Identity, ok bool) {
	var ids []identity.Identity
	for _, have := range e.owners {
		if e.refused[have] {
			continue
		}
		if have.IsManager() {
			return have, true
		}
		ids = append(ids, have)
	}
	if len(ids) == 0 {
		return identity.Identity{}, false
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].String() < ids[j].String() })
	return ids[0], true
}

// release drops owner from k's watch, stopping it when no owner is left
// and moving it to another identity when none needs its carrier's. The
// caller holds w.mu.
func (w *Watcher) release(owner string, k Key) {
	sc := k.scope()
	e, ok := w.watches[sc]
	if !ok {
		return
	}
	delete(e.owners, owner)
	switch {
	case len(e.owners) == 0:
		e.run.stop()
		delete(w.watches, sc)
	case !e.needs(e.carrier):
		if id, ok := e.next(); ok {
			w.carry(sc, e, id)
		}
	}
}

// refuse is told that the API server refused run, the watch of sc, a
// list or watch as id: the watch moves to another owner's identity, if
// there is one it was not refused as. Otherwise it goes on retrying as id.
func (w *Watcher) refuse(sc scope, run *informer, id identity.Identity) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.watches[sc]
	if e == nil || e.run != run || e.refused[id] {
		return
	}
	e.refused[id] = true
	if next, ok := e.next(); ok {
		w.carry(sc, e, next)
	}
}

// carry restarts e's watch as id. The new run's first list does not
// report objects the old one held unchanged. The caller holds w.mu.
func (w *Watcher) carry(sc scope, e *entry, id identity.Identity) {
	old := e.run
	run, err := w.start(sc, id, old.store)
	if err != nil {
		// No client as id: keep the watch as it runs.
		e.refused[id] = true
		return
	}
	old.stop()
	e.run, e.carrier = run, id
	go w.reportGone(sc.kind, old.store, run)
}

// reportGone waits until run has synced and reports as deleted what prev
// held and run does not: objects deleted while the watch moved.
func (w *Watcher) reportGone(kind schema.GroupVersionKind, prev cache.Store, run *informer) {
	if !cache.WaitForCacheSync(run.done, run.synced) {
		return
	}
	for _, item := range prev.List() {
		m, ok := item.(*metav1.PartialObjectMetadata)
		if !ok {
			continue
		}
		if _, exists, _ := run.store.Get(m); !exists {
			w.handle(kind, m, nil, true)
		}
	}
}

// start runs a watch of sc as id; its first list leaves out the objects
// prev holds unchanged (nil: reports them all). The caller holds w.mu.
func (w *Watcher) start(sc scope, id identity.Identity, prev cache.Store) (*informer, error) {
	md, err := w.clients(id)
	if err != nil {
		return nil, fmt.Errorf("watching %s as %s: %w", sc.resource, id, err)
	}
	ri := md.Resource(sc.resource)
	var res metadata.ResourceInterface = ri
	if sc.namespace != "" {
		res = ri.Namespace(sc.namespace)
	}
	run := &informer{}
	selector := w.selector
	refused := func(err error) error {
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			go w.refuse(sc, run, id)
		}
		return err
	}
	listed := func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if e := w.watches[sc]; e != nil && e.run == run {
			delete(e.refused, id)
		}
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.LabelSelector = selector
			list, err := res.List(ctx, opts)
			run.failing.Store(err != nil)
			if err == nil {
				listed()
			}
			return list, refused(err)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = selector
			wi, err := res.Watch(ctx, opts)
			return wi, refused(err)
		},
	}
	kind := sc.kind
	known := func(m *metav1.PartialObjectMetadata) bool {
		if prev == nil {
			return false
		}
		item, exists, _ := prev.Get(m)
		was, ok := item.(*metav1.PartialObjectMetadata)
		return exists && ok && was.ResourceVersion == m.ResourceVersion
	}
	// A plain informer, not a shared one: the handler runs on the
	// informer's own loop, without the shared informer's listener
	// goroutines and buffers.
	store, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw,
		ObjectType:    &metav1.PartialObjectMetadata{},
		Transform:     crcache.TransformStripManagedFields(),
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) {
				if m, ok := obj.(*metav1.PartialObjectMetadata); ok && !known(m) {
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
	run.store, run.synced, run.stop, run.done = store, ctrl.HasSynced, cancel, ctx.Done()
	go ctrl.RunWithContext(ctx)
	return run, nil
}
