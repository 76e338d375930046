package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// restores tells when edited managed ConfigMaps are restored, from one
// watch of them: polling each edited object instead costs the API server
// a read every few milliseconds per object waiting, which, when
// restoring slows down, slows it down more.
type restores struct {
	mu      sync.Mutex
	waiting map[client.ObjectKey]*restore
}

// restore is one edited object waited for.
type restore struct {
	// want is the value of its data key index the manager restores.
	want string
	// after is the resource version read before the edit: only a later
	// version (numerically, as etcd's are) counts.
	after uint64
	// done is closed when it is restored, at restored.
	done     chan struct{}
	restored time.Time
}

// watchRestores starts a watch of the ConfigMaps rukpak manages and
// returns once it has listed them.
func watchRestores(ctx context.Context, cs kubernetes.Interface) (*restores, error) {
	r := &restores{waiting: map[client.ObjectKey]*restore{}}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = v1alpha2.LabelOwnerName
	}))
	inf := f.Core().V1().ConfigMaps().Informer()
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    r.seen,
		UpdateFunc: func(_, obj any) { r.seen(obj) },
	}); err != nil {
		return nil, fmt.Errorf("watching managed ConfigMaps: %w", err)
	}
	f.Start(ctx.Done())
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("listing managed ConfigMaps: %w", ctx.Err())
	}
	return r, nil
}

// expect starts waiting for key, read at resource version after and
// about to be edited, to be restored with index want; the channel is
// closed when it is, and the function returns when.
func (r *restores) expect(key client.ObjectKey, want, after string) (<-chan struct{}, func() time.Time, error) {
	rv, err := strconv.ParseUint(after, 10, 64)
	if err != nil {
		return nil, nil, fmt.Errorf("resource version %q of %s: %w", after, key, err)
	}
	w := &restore{want: want, after: rv, done: make(chan struct{})}
	r.mu.Lock()
	r.waiting[key] = w
	r.mu.Unlock()
	return w.done, func() time.Time {
		r.mu.Lock()
		defer r.mu.Unlock()
		return w.restored
	}, nil
}

// forget stops waiting for key.
func (r *restores) forget(key client.ObjectKey) {
	r.mu.Lock()
	delete(r.waiting, key)
	r.mu.Unlock()
}

// seen takes a ConfigMap as the watch shows it.
func (r *restores) seen(obj any) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok || !cm.DeletionTimestamp.IsZero() {
		return
	}
	key := client.ObjectKeyFromObject(cm)
	rv, err := strconv.ParseUint(cm.ResourceVersion, 10, 64)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.waiting[key]
	if w == nil || rv <= w.after || cm.Data["index"] != w.want {
		return
	}
	delete(r.waiting, key)
	w.restored = time.Now()
	close(w.done)
}
