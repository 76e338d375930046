// Package follow lets a test see every change to a set of objects from a
// point on. The API server may close any watch at any time (its request
// timeout, or a watcher that falls behind its watch cache under load); a
// test that counts events from a plain watch then silently counts too few.
// follow resumes such a watch from the last resourceVersion it delivered,
// so no event is lost or seen twice, and reports a watch that could not go
// on instead of stopping quietly.
package follow

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Watch lists the objects of list's type that opts select into list, then
// calls handle, from one goroutine, for every change after that list until
// the test ends. The returned function reports why the watch stopped early,
// nil while it goes on: a check that counts events should fail with it
// rather than with the counts.
func Watch(t testing.TB, c client.WithWatch, list client.ObjectList, handle func(watch.Event), opts ...client.ListOption) func() error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := c.List(ctx, list, opts...); err != nil {
		t.Fatalf("list %T: %v", list, err)
	}
	acc, err := meta.ListAccessor(list)
	if err != nil {
		t.Fatalf("list %T: %v", list, err)
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, acc.GetResourceVersion(), &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			all := append(append([]client.ListOption(nil), opts...), &client.ListOptions{Raw: &o})
			return c.Watch(ctx, list.DeepCopyObject().(client.ObjectList), all...)
		},
	})
	if err != nil {
		t.Fatalf("watch %T: %v", list, err)
	}
	t.Cleanup(w.Stop)

	var mu sync.Mutex
	var ended error
	go func() {
		for e := range w.ResultChan() {
			if e.Type == watch.Error {
				mu.Lock()
				ended = fmt.Errorf("the watch of %T failed: %v", list, e.Object)
				mu.Unlock()
				return
			}
			if e.Type != watch.Bookmark { // a resume point, no change
				handle(e)
			}
		}
		mu.Lock()
		if ended == nil && ctx.Err() == nil {
			ended = fmt.Errorf("the watch of %T stopped", list)
		}
		mu.Unlock()
	}()
	return func() error {
		mu.Lock()
		defer mu.Unlock()
		return ended
	}
}
