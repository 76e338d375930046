//go:build integration

package objectwatch

import (
	"context"
	"fmt"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/rukpak/rukpak/internal/identity"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// TestReleaseStopsGoroutines starts watches as many distinct identities
// in several namespaces, lets them sync, releases them all (the watches
// moving from identity to identity as their carriers' owners let go) and
// checks that the goroutines they ran are gone again: churning identities
// does not leak.
func TestReleaseStopsGoroutines(t *testing.T) {
	const namespaces, perNamespace = 20, 10
	// leeway is goroutines that may outlive the watches without being a
	// leak (idle HTTP/2 connection readers and the like).
	const leeway = 10
	var nss []string
	for range namespaces {
		ns := env.Namespace(t, "ow-leak")
		allowConfigMaps(t, ns, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:serviceaccounts:" + ns})
		create(t, configMap(ns, "probe", true, "1"))
		nss = append(nss, ns)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cl, pool := clients(t)
	w := New(ctx, watchedLabel, cl, (&recorder{}).handle)

	// Warm up: the first watch opens the shared connection.
	warm := key(identity.ServiceAccount(nss[0], "warm-up"), nss[0])
	if err := w.Ensure("warm-up", []Key{warm}); err != nil {
		t.Fatal(err)
	}
	seen(t, w, warm, nss[0], "probe", "1")
	w.Release("warm-up")
	base := settledGoroutines()

	var keys []Key
	for i := range namespaces * perNamespace {
		ns := nss[i%namespaces]
		k := key(identity.ServiceAccount(ns, fmt.Sprintf("sa-%d", i)), ns)
		if err := w.Ensure(fmt.Sprintf("bd-%d", i), []Key{k}); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	wantLen(t, w, namespaces)
	envtest.Eventually(t, 60*time.Second, func() error {
		for _, k := range keys {
			if _, ok := w.Get(k, k.Namespace, "probe"); !ok {
				return fmt.Errorf("the watch of %s for %s has not synced", k.Namespace, k.Identity)
			}
		}
		return nil
	})
	peak := runtime.NumGoroutine()
	t.Logf("goroutines: %d before, %d with %d watches for %d identities", base, peak, namespaces, len(keys))
	if peak-base < namespaces {
		t.Fatalf("%d watches run only %d more goroutines: the test does not measure what it should", namespaces, peak-base)
	}

	for i := range keys {
		w.Release(fmt.Sprintf("bd-%d", i))
		pool.Forget(keys[i].Identity)
	}
	wantLen(t, w, 0)
	// Informers stop asynchronously.
	deadline := time.Now().Add(30 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= base+leeway {
			t.Logf("goroutines: %d after release", n)
			break
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
			dump := b.String()
			if len(dump) > 8000 {
				dump = dump[:8000] + "\n…"
			}
			t.Fatalf("goroutines: %d before, %d with watches, still %d 30s after releasing them all:\n%s", base, peak, n, dump)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// settledGoroutines waits until the number of goroutines has not changed
// for half a second, and returns it.
func settledGoroutines() int {
	last, since := runtime.NumGoroutine(), time.Now()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		if n := runtime.NumGoroutine(); n != last {
			last, since = n, time.Now()
		} else if time.Since(since) > 500*time.Millisecond {
			break
		}
	}
	return last
}
