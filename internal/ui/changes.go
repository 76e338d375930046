package ui

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// keepAlive is how often /events writes a comment, so that proxies and
// the browser keep an idle stream open.
const keepAlive = 25 * time.Second

// Hub fans the changes watches report out to the open pages. Its zero
// value is ready; Notify never blocks.
type Hub struct {
	mu      sync.Mutex
	subs    map[chan struct{}]string // → the BundleDeployment it follows; "" for all
	version uint64
}

// Version counts the changes so far: a page records it before it reads
// the cluster, and reloads when the stream's is another (a change between
// its reads and its subscription).
func (h *Hub) Version() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.version
}

// Subscribe returns a channel that receives a value after changes of
// BundleDeployment bd and its Bundles (of every one when bd is empty; one
// pending value at most: changes coalesce) and a function that ends the
// subscription.
func (h *Hub) Subscribe(bd string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	if h.subs == nil {
		h.subs = map[chan struct{}]string{}
	}
	h.subs[ch] = bd
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.subs, ch)
		h.mu.Unlock()
	}
}

// Notify tells the subscribers that BundleDeployment bd, or one of its
// Bundles, changed ("" when it is not known whose).
func (h *Hub) Notify(bd string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.version++
	for ch, follows := range h.subs {
		if follows != "" && bd != "" && follows != bd {
			continue
		}
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// owner names the BundleDeployment obj (a BundleDeployment, a Bundle or a
// cache's tombstone of one) is or belongs to; "" when it is not known.
func owner(obj any) string {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	switch o := obj.(type) {
	case *v1alpha2.BundleDeployment:
		return o.Name
	case *v1alpha2.Bundle:
		return o.Labels[v1alpha2.LabelBundleDeployment]
	}
	return ""
}

// syncTimeout bounds how long Watch waits for the informers' first lists.
const syncTimeout = 15 * time.Second

// Watch starts informers, as the user of cfg, on BundleDeployments and
// Bundles and notifies h of every change until ctx ends. The informers
// list and watch (relisting after a broken watch); they are what makes
// the pages live. It returns once h has been told of every object the
// first lists found, or after syncTimeout (synced false: a user who may
// not list or watch them gets pages that are not live).
func Watch(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, h *Hub) (synced bool, err error) {
	c, err := cache.New(cfg, cache.Options{Scheme: scheme})
	if err != nil {
		return false, fmt.Errorf("creating the watch cache: %w", err)
	}
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { h.Notify(owner(obj)) },
		UpdateFunc: func(_, obj any) { h.Notify(owner(obj)) },
		DeleteFunc: func(obj any) { h.Notify(owner(obj)) },
	}
	var regs []toolscache.ResourceEventHandlerRegistration
	for _, obj := range []client.Object{&v1alpha2.BundleDeployment{}, &v1alpha2.Bundle{}} {
		inf, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			return false, fmt.Errorf("watching %T: %w", obj, err)
		}
		reg, err := inf.AddEventHandler(handler)
		if err != nil {
			return false, fmt.Errorf("watching %T: %w", obj, err)
		}
		regs = append(regs, reg)
	}
	go func() { _ = c.Start(ctx) }()
	sctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	hasSynced := make([]toolscache.InformerSynced, 0, len(regs))
	for _, r := range regs {
		hasSynced = append(hasSynced, r.HasSynced)
	}
	return toolscache.WaitForCacheSync(sctx.Done(), hasSynced...), nil
}

// events streams to the page a server-sent event "version" (the Hub's
// Version) when it connects, an event "change" after each change the Hub
// reports (of BundleDeployment ?bd= and its Bundles only, when given),
// and a comment every keepAlive.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok || s.opts.Changes == nil {
		http.Error(w, "live updates are not available", http.StatusNotFound)
		return
	}
	changes, stop := s.opts.Changes.Subscribe(r.URL.Query().Get("bd"))
	defer stop()
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "retry: 3000\n\nevent: version\ndata: %d\n\n", s.opts.Changes.Version())
	flusher.Flush()
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-changes:
			fmt.Fprintf(w, "event: change\ndata: %d\n\n", s.opts.Changes.Version())
		case <-tick.C:
			fmt.Fprint(w, ": keep-alive\n\n")
		}
		flusher.Flush()
	}
}
