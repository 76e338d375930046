//go:build integration

package objectwatch

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/internal/identity"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// setLabel sets label v=value on ConfigMap ns/name, optionally also
// adding or removing watchedLabel.
func setLabel(t testing.TB, ns, name, value string, watched *bool) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Labels["v"] = value
	if watched != nil {
		if *watched {
			cm.Labels[watchedLabel] = "yes"
		} else {
			delete(cm.Labels, watchedLabel)
		}
	}
	if err := env.Client.Update(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
}

func deleteConfigMap(t testing.TB, ns, name string) {
	t.Helper()
	if err := env.Client.Delete(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
		t.Fatal(err)
	}
}

// eventually waits until the recorder holds an event of ns/name matching
// match.
func eventually(t testing.TB, rec *recorder, ns, name, what string, match func(event) bool) {
	t.Helper()
	envtest.Eventually(t, 30*time.Second, func() error {
		for _, e := range rec.of(ns, name) {
			if match(e) {
				return nil
			}
		}
		return fmt.Errorf("no %s event of %s/%s; have %+v", what, ns, name, rec.of(ns, name))
	})
}

func wantLen(t testing.TB, w *Watcher, want int) {
	t.Helper()
	if n := w.Len(); n != want {
		t.Fatalf("Len() = %d, want %d", n, want)
	}
}

// TestSharedWatch: two owners of one key share one watch, which sees the
// selected objects' creation, updates and deletion and nothing else, and
// stops when the last owner lets go.
func TestSharedWatch(t *testing.T) {
	ns := env.Namespace(t, "ow-shared")
	w, rec := newWatcher(t)
	k := key(identity.Manager, ns)
	for _, owner := range []string{"a", "b", "a"} {
		if err := w.Ensure(owner, []Key{k}); err != nil {
			t.Fatal(err)
		}
	}
	wantLen(t, w, 1)

	create(t, configMap(ns, "watched", true, "1"), configMap(ns, "unwatched", false, "1"),
		configMap(ns, "labelled-later", false, "1"), configMap(ns, "unlabelled-later", true, "1"))
	seen(t, w, k, ns, "watched", "1")
	eventually(t, rec, ns, "watched", "create", func(e event) bool {
		return e.value == "1" && !e.hasOld && !e.deleted && e.kind == configMapGVK
	})

	setLabel(t, ns, "watched", "2", nil)
	seen(t, w, k, ns, "watched", "2")
	eventually(t, rec, ns, "watched", "update", func(e event) bool {
		return e.hasOld && e.oldValue == "1" && e.value == "2" && !e.deleted
	})

	// Gaining the label looks like a creation, losing it like a deletion.
	yes, no := true, false
	setLabel(t, ns, "labelled-later", "2", &yes)
	seen(t, w, k, ns, "labelled-later", "2")
	seen(t, w, k, ns, "unlabelled-later", "1")
	setLabel(t, ns, "unlabelled-later", "2", &no)
	eventually(t, rec, ns, "unlabelled-later", "delete (label removed)", func(e event) bool { return e.deleted })

	deleteConfigMap(t, ns, "watched")
	eventually(t, rec, ns, "watched", "delete", func(e event) bool { return e.deleted && e.value == "2" })
	if _, ok := w.Get(k, ns, "watched"); ok {
		t.Error("Get finds a deleted object")
	}

	setLabel(t, ns, "unwatched", "2", nil)
	deleteConfigMap(t, ns, "unwatched")
	// Events of one object arrive in order: once the marker's are seen,
	// any of the unwatched object's would have been too.
	create(t, configMap(ns, "marker", true, "1"))
	seen(t, w, k, ns, "marker", "1")
	if _, ok := w.Get(k, ns, "unwatched"); ok {
		t.Error("Get finds an object without the selected label")
	}
	if got := rec.of(ns, "unwatched"); len(got) > 0 {
		t.Errorf("events of an object without the selected label: %+v", got)
	}
	if _, ok := w.Get(k, ns, "unlabelled-later"); ok {
		t.Error("Get finds an object whose label was removed")
	}

	// One owner lets go: the watch stays, with what it holds.
	w.Release("a")
	w.Release("never-owned")
	wantLen(t, w, 1)
	if _, ok := w.Get(k, ns, "marker"); !ok {
		t.Error("the watch lost its objects when one of two owners let go")
	}
	// The last owner lets go: the watch stops.
	w.Release("b")
	wantLen(t, w, 0)
	if _, ok := w.Get(k, ns, "marker"); ok {
		t.Error("Get answers from a stopped watch")
	}
	w.Release("b") // twice is fine
	wantLen(t, w, 0)
}

// TestEnsureReplacesKeys: Ensure makes an owner's watches exactly the keys
// given, releasing the ones dropped (stopped when no other owner has them).
func TestEnsureReplacesKeys(t *testing.T) {
	ns1, ns2 := env.Namespace(t, "ow-keys"), env.Namespace(t, "ow-keys")
	w, _ := newWatcher(t)
	k1, k2 := key(identity.Manager, ns1), key(identity.Manager, ns2)
	create(t, configMap(ns1, "one", true, "1"), configMap(ns2, "two", true, "1"))

	if err := w.Ensure("a", []Key{k1, k2, k1}); err != nil {
		t.Fatal(err)
	}
	if err := w.Ensure("b", []Key{k2}); err != nil {
		t.Fatal(err)
	}
	wantLen(t, w, 2)
	seen(t, w, k1, ns1, "one", "1")
	seen(t, w, k2, ns2, "two", "1")
	if _, ok := w.Get(k1, ns2, "two"); ok {
		t.Error("the watch of one namespace holds an object of another")
	}

	// a drops k2, which b still has.
	if err := w.Ensure("a", []Key{k1}); err != nil {
		t.Fatal(err)
	}
	wantLen(t, w, 2)
	seen(t, w, k2, ns2, "two", "1")

	// b drops k2: nobody has it.
	if err := w.Ensure("b", nil); err != nil {
		t.Fatal(err)
	}
	wantLen(t, w, 1)
	if _, ok := w.Get(k2, ns2, "two"); ok {
		t.Error("Get answers from a watch no owner has")
	}
	seen(t, w, k1, ns1, "one", "1")

	// a swaps k1 for k2: a fresh watch lists what exists.
	if err := w.Ensure("a", []Key{k2}); err != nil {
		t.Fatal(err)
	}
	wantLen(t, w, 1)
	if _, ok := w.Get(k1, ns1, "one"); ok {
		t.Error("Get answers from a released watch")
	}
	seen(t, w, k2, ns2, "two", "1")

	if err := w.Ensure("a", []Key{}); err != nil {
		t.Fatal(err)
	}
	wantLen(t, w, 0)
}

// TestDistinctKeys: a resource watched in another namespace, or cluster
// wide, is another watch; the same resource and namespace watched as
// several identities is one.
func TestDistinctKeys(t *testing.T) {
	ns := env.Namespace(t, "ow-distinct")
	w, _ := newWatcher(t)
	keys := []Key{
		key(identity.Manager, ns),
		key(identity.Manager, ""),
		key(identity.ServiceAccount(ns, "a"), ns),
		key(identity.ServiceAccount(ns, "b"), ns),
	}
	if err := w.Ensure("owner", keys); err != nil {
		t.Fatal(err)
	}
	wantLen(t, w, 2)
	w.Release("owner")
	wantLen(t, w, 0)
}

// TestWatchMovesBetweenIdentities: ServiceAccounts installing into one
// namespace share one watch. It runs as one of them; when that one's
// owner lets go, or the API server refuses it, the watch carries on as
// another, without reporting again what did not change and without
// missing what did.
func TestWatchMovesBetweenIdentities(t *testing.T) {
	ns := env.Namespace(t, "ow-move")
	allowed := []string{"a", "b"}
	for _, sa := range allowed {
		create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}})
		allowConfigMaps(t, ns, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns})
	}
	create(t, configMap(ns, "one", true, "1"), configMap(ns, "two", true, "1"))
	w, rec := newWatcher(t)
	// "0-refused" comes first by name and may not list: the watch starts
	// as it, is refused, and moves to a.
	refused, a, b := identity.ServiceAccount(ns, "0-refused"), identity.ServiceAccount(ns, "a"), identity.ServiceAccount(ns, "b")
	if err := w.Ensure("bd-refused", []Key{key(refused, ns)}); err != nil {
		t.Fatal(err)
	}
	if err := w.Ensure("bd-a", []Key{key(a, ns)}); err != nil {
		t.Fatal(err)
	}
	if err := w.Ensure("bd-b", []Key{key(b, ns)}); err != nil {
		t.Fatal(err)
	}
	wantLen(t, w, 1)
	seen(t, w, key(a, ns), ns, "one", "1")
	seen(t, w, key(b, ns), ns, "one", "1")
	if _, ok := w.Get(key(refused, ns), ns, "one"); ok {
		t.Error("Get answers for an identity the API server refused the watch")
	}
	if n := len(rec.of(ns, "one")); n != 1 {
		t.Errorf("%d events of one, want its creation once: %+v", n, rec.of(ns, "one"))
	}

	// a lets go: the watch moves to b. What changes while it moves is
	// seen; what did not is not reported again.
	w.Release("bd-a")
	deleteConfigMap(t, ns, "two")
	wantLen(t, w, 1)
	eventually(t, rec, ns, "two", "delete", func(e event) bool { return e.deleted })
	setLabel(t, ns, "one", "2", nil)
	seen(t, w, key(b, ns), ns, "one", "2")
	eventually(t, rec, ns, "one", "update", func(e event) bool { return e.value == "2" })
	reported := 0
	for _, e := range rec.of(ns, "one") {
		if e.value == "1" {
			reported++
		}
	}
	if reported != 1 {
		t.Errorf("one at version 1 reported %d times, want once (not again after the watch moved): %+v", reported, rec.of(ns, "one"))
	}
	if _, ok := w.Get(key(a, ns), ns, "one"); ok {
		t.Error("Get answers for an identity no owner needs any more")
	}
	w.Release("bd-b")
	w.Release("bd-refused")
	wantLen(t, w, 0)
}

// TestServiceAccountWatch: a watch as a ServiceAccount allowed to list and
// watch ConfigMaps only in its namespace works there, and never syncs
// where it is not allowed.
func TestServiceAccountWatch(t *testing.T) {
	ns := env.Namespace(t, "ow-sa")
	other := env.Namespace(t, "ow-sa-other")
	const sa = "watcher"
	create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}})
	allowConfigMaps(t, ns, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns})
	create(t, configMap(ns, "mine", true, "1"), configMap(other, "theirs", true, "1"))

	w, rec := newWatcher(t)
	id := identity.ServiceAccount(ns, sa)
	mine, theirs, all := key(id, ns), key(id, other), key(id, "")
	if err := w.Ensure("bd", []Key{mine}); err != nil {
		t.Fatal(err)
	}
	seen(t, w, mine, ns, "mine", "1")
	setLabel(t, ns, "mine", "2", nil)
	eventually(t, rec, ns, "mine", "update", func(e event) bool { return e.hasOld && e.value == "2" })

	// Not allowed: Ensure starts the watches (their lists are refused and
	// retried in the background), and they never sync.
	if err := w.Ensure("bd", []Key{mine, theirs, all}); err != nil {
		t.Fatal(err)
	}
	wantLen(t, w, 3)
	time.Sleep(2 * time.Second)
	if _, ok := w.Get(theirs, other, "theirs"); ok {
		t.Error("a watch in a namespace the ServiceAccount may not list holds an object")
	}
	if _, ok := w.Get(all, other, "theirs"); ok {
		t.Error("a cluster-wide watch the ServiceAccount may not list holds an object")
	}
	if got := rec.of(other, "theirs"); len(got) > 0 {
		t.Errorf("events of an object the ServiceAccount may not list: %+v", got)
	}
	seen(t, w, mine, ns, "mine", "2")
	w.Release("bd")
	wantLen(t, w, 0)
}

// TestAwait: Await joins an owner to the watches it names, keeping the
// ones it held, and returns once Get answers from each: synced (the
// objects listed are there at once), or refused (it does not wait for a
// watch that cannot list), or when its context ends.
func TestAwait(t *testing.T) {
	ns := env.Namespace(t, "ow-await")
	other := env.Namespace(t, "ow-await-other")
	const sa = "awaiter"
	create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}})
	allowConfigMaps(t, ns, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns})
	var names []string
	for i := range 50 {
		names = append(names, fmt.Sprintf("cm-%d", i))
		create(t, configMap(ns, names[i], true, "1"))
	}
	create(t, configMap(other, "theirs", true, "1"))

	w, _ := newWatcher(t)
	id := identity.ServiceAccount(ns, sa)
	mine, theirs := key(id, ns), key(id, other)
	held := key(identity.Manager, "")
	if err := w.Ensure("bd", []Key{held}); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// theirs is refused: Await does not wait for it.
	if err := w.Await(ctx, "bd", []Key{mine, theirs}); err != nil {
		t.Fatalf("Await: %v", err)
	}
	for _, name := range names {
		if _, ok := w.Get(mine, ns, name); !ok {
			t.Fatalf("after Await, Get does not answer for %s/%s", ns, name)
		}
	}
	if _, ok := w.Get(theirs, other, "theirs"); ok {
		t.Error("a watch the ServiceAccount may not list holds an object")
	}
	// The watch held before is kept; Ensure makes them exact again.
	wantLen(t, w, 3)
	seen(t, w, held, other, "theirs", "1")
	if err := w.Ensure("bd", []Key{mine}); err != nil {
		t.Fatal(err)
	}
	wantLen(t, w, 1)

	// A resource the API server does not serve fails its lists: no wait.
	gone := Key{Identity: identity.Manager, Resource: schema.GroupVersionResource{Group: "nowhere.rukpak.io", Version: "v1", Resource: "widgets"},
		Kind: schema.GroupVersionKind{Group: "nowhere.rukpak.io", Version: "v1", Kind: "Widget"}}
	start := time.Now()
	if err := w.Await(ctx, "bd", []Key{gone}); err != nil {
		t.Fatalf("Await of an unserved resource: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Await of an unserved resource took %s", d)
	}

	// A context that ends first ends the wait with its error.
	w2, _ := newWatcher(t)
	done, stop := context.WithCancel(context.Background())
	stop()
	if err := w2.Await(done, "bd", []Key{key(identity.Manager, ns)}); !errors.Is(err, context.Canceled) {
		t.Errorf("Await with a cancelled context: %v, want context.Canceled", err)
	}
}
