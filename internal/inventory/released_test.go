//go:build integration

package inventory

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

func newOwner(prefix string) Owner {
	return Owner{Name: envtest.UniqueName(prefix), UID: uuid.NewUUID()}
}

func crdID(name string) ID {
	return ID{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition", Name: name}
}

// alive says the owners in live exist.
func alive(live ...Owner) Alive {
	return func(_ context.Context, o Owner) (bool, error) {
		for _, l := range live {
			if l == o {
				return true, nil
			}
		}
		return false, nil
	}
}

// TestTake: an object is taken only through its releaser's record, by the
// UID it was released with, and by one BundleDeployment at a time.
func TestTake(t *testing.T) {
	ctx := context.Background()
	s := NewStore(env.Client, env.Client, v1alpha2.SystemNamespace)
	from, b, c := newOwner("from"), newOwner("b"), newOwner("c")
	x, y := crdID("xs.example.com"), crdID("ys.example.com")
	if _, err := s.Release(ctx, from, []Released{{ID: x, UID: "uid-x"}}, nil); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		from  Owner
		id    ID
		uid   types.UID
		taker Owner
		alive Alive
		want  TakeVerdict
		by    Owner
	}{
		{name: "not in the record", from: from, id: y, uid: "uid-y", taker: b, want: NotReleased},
		{name: "another object under the released name", from: from, id: x, uid: "uid-other", taker: b, want: NotReleased},
		{name: "labels naming the releaser's uid with another name", from: Owner{Name: "forged", UID: from.UID}, id: x, uid: "uid-x", taker: b, want: NotReleased},
		{name: "a releaser without a record", from: newOwner("none"), id: x, uid: "uid-x", taker: b, want: NotReleased},
		{name: "first taker", from: from, id: x, uid: "uid-x", taker: b, alive: alive(b), want: Granted},
		{name: "the same taker again", from: from, id: x, uid: "uid-x", taker: b, alive: alive(b), want: Granted},
		{name: "another while the first exists", from: from, id: x, uid: "uid-x", taker: c, alive: alive(b, c), want: TakenByOther, by: b},
		{name: "another once the first is gone", from: from, id: x, uid: "uid-x", taker: c, alive: alive(c), want: Granted},
		{name: "the first is refused now", from: from, id: x, uid: "uid-x", taker: b, alive: alive(b, c), want: TakenByOther, by: c},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			peeked, peekedBy, err := s.Peek(ctx, tt.from, tt.id, tt.uid, tt.taker, tt.alive)
			if err != nil || peeked != tt.want || peekedBy != tt.by {
				t.Fatalf("Peek = %v, %v, %v; want %v, %v", peeked, peekedBy, err, tt.want, tt.by)
			}
			got, by, err := s.Take(ctx, tt.from, tt.id, tt.uid, tt.taker, tt.alive)
			if err != nil || got != tt.want || by != tt.by {
				t.Fatalf("Take = %v, %v, %v; want %v, %v", got, by, err, tt.want, tt.by)
			}
		})
	}
	// A Store that starts afresh (a restarted manager) reads the same.
	fresh := NewStore(env.Client, env.Client, v1alpha2.SystemNamespace)
	if got, by, err := fresh.Take(ctx, from, x, "uid-x", b, alive(b, c)); err != nil || got != TakenByOther || by != c {
		t.Fatalf("Take after a restart = %v, %v, %v; want taken by %v", got, by, err, c)
	}
}

// TestReleaseAndSettle: releasing again keeps a taker for the same
// object and drops it for another; forgetting removes entries; a taker
// that is deleted lets go — entries of objects it took are dropped, the
// others released again — and an empty record is deleted.
func TestReleaseAndSettle(t *testing.T) {
	ctx := context.Background()
	s := NewStore(env.Client, env.Client, v1alpha2.SystemNamespace)
	from, b := newOwner("from"), newOwner("b")
	x, y, z := crdID("xs.example.com"), crdID("ys.example.com"), crdID("zs.example.com")
	if _, err := s.Release(ctx, from, []Released{{ID: x, UID: "ux"}, {ID: y, UID: "uy"}, {ID: z, UID: "uz"}}, nil); err != nil {
		t.Fatal(err)
	}
	for _, id := range []ID{x, y, z} {
		uid := types.UID("u" + id.Name[:1])
		if v, _, err := s.Take(ctx, from, id, uid, b, alive(b)); err != nil || v != Granted {
			t.Fatalf("Take %s = %v, %v", id, v, err)
		}
	}
	// z again with the same UID keeps b; y with another UID is a new
	// release; x is forgotten.
	if _, err := s.Release(ctx, from, []Released{{ID: z, UID: "uz"}, {ID: y, UID: "uy2"}}, []ID{x}); err != nil {
		t.Fatal(err)
	}
	want := []Released{{ID: y, UID: "uy2"}, {ID: z, UID: "uz", TakenBy: b}}
	if got, err := s.Releases(ctx, from); err != nil || !sameReleased(got, want) {
		t.Fatalf("Releases = %+v, %v; want %+v", got, err, want)
	}
	// b is deleted: it had written z (dropped); y it never took.
	if v, _, err := s.Take(ctx, from, y, "uy2", b, alive(b)); err != nil || v != Granted {
		t.Fatalf("Take y = %v, %v", v, err)
	}
	envtestEventuallyLabelled(t, from, b)
	if err := s.Settle(ctx, b, func(id ID) bool { return id.Key() == z.Key() }); err != nil {
		t.Fatal(err)
	}
	want = []Released{{ID: y, UID: "uy2"}}
	if got, err := NewStore(env.Client, env.Client, v1alpha2.SystemNamespace).Releases(ctx, from); err != nil || !sameReleased(got, want) {
		t.Fatalf("Releases after Settle = %+v, %v; want %+v", got, err, want)
	}
	// Forgetting the last entry deletes the record.
	if _, err := s.Release(ctx, from, nil, []ID{y}); err != nil {
		t.Fatal(err)
	}
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: v1alpha2.SystemNamespace, Name: releasedName(from.UID)}, &corev1.ConfigMap{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("empty release record: %v; want it deleted", err)
	}
}

// envtestEventuallyLabelled waits until from's record, as the API server
// has it, is labelled as taken from by taker (Settle finds records by it).
func envtestEventuallyLabelled(t *testing.T, from, taker Owner) {
	t.Helper()
	envtest.Eventually(t, 10*time.Second, func() error {
		cm := &corev1.ConfigMap{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: v1alpha2.SystemNamespace, Name: releasedName(from.UID)}, cm); err != nil {
			return err
		}
		if cm.Labels[labelTakenByPrefix+string(taker.UID)] != "true" {
			return fmt.Errorf("record labels %v", cm.Labels)
		}
		return nil
	})
}

// TestTakesAtOnceShareWrites: many objects of one record taken at the
// same time are all granted, with far fewer writes than objects.
func TestTakesAtOnceShareWrites(t *testing.T) {
	ctx := context.Background()
	s := NewStore(env.Client, env.Client, v1alpha2.SystemNamespace)
	from, b := newOwner("from"), newOwner("b")
	const n = 300
	kept := make([]Released, n)
	for i := range kept {
		kept[i] = Released{ID: crdID(fmt.Sprintf("k%03d.example.com", i)), UID: types.UID(fmt.Sprintf("u%03d", i))}
	}
	if _, err := s.Release(ctx, from, kept, nil); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{}
	key := client.ObjectKey{Namespace: v1alpha2.SystemNamespace, Name: releasedName(from.UID)}
	if err := env.Client.Get(ctx, key, cm); err != nil {
		t.Fatal(err)
	}
	before := cm.ResourceVersion
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range kept {
		wg.Add(1)
		go func(k Released) {
			defer wg.Done()
			if v, _, err := s.Take(ctx, from, k.ID, k.UID, b, alive(b)); err != nil || v != Granted {
				errs <- fmt.Errorf("Take %s = %v, %v", k.ID, v, err)
			}
		}(kept[i])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := NewStore(env.Client, env.Client, v1alpha2.SystemNamespace).Releases(ctx, from)
	if err != nil || len(got) != n {
		t.Fatalf("Releases = %d entries, %v", len(got), err)
	}
	for _, e := range got {
		if e.TakenBy != b {
			t.Fatalf("entry %s taken by %v, want %v", e.ID, e.TakenBy, b)
		}
	}
	if err := env.Client.Get(ctx, key, cm); err != nil {
		t.Fatal(err)
	}
	// resourceVersions are etcd revisions here: the difference counts
	// every write to the cluster in between (a lease renewal or two
	// besides the record's).
	from0, err0 := strconv.Atoi(before)
	to, err1 := strconv.Atoi(cm.ResourceVersion)
	if err0 != nil || err1 != nil {
		t.Fatalf("resourceVersions %q, %q are not revisions", before, cm.ResourceVersion)
	}
	if writes := to - from0; writes < 1 || writes > n/4 {
		t.Fatalf("%d takes made %d writes; want at least one, far fewer than one each", n, writes)
	}
}

// TestReleaseIsBounded: at most maxReleased objects are recorded; the
// rest are counted.
func TestReleaseIsBounded(t *testing.T) {
	ctx := context.Background()
	s := NewStore(env.Client, env.Client, v1alpha2.SystemNamespace)
	from := newOwner("big")
	kept := make([]Released, maxReleased+3)
	for i := range kept {
		kept[i] = Released{ID: ID{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: fmt.Sprintf("object-with-a-longish-name-%05d", i)}, UID: uuid.NewUUID()}
	}
	left, err := s.Release(ctx, from, kept, nil)
	if err != nil || left != 3 {
		t.Fatalf("Release = %d left out, %v; want 3", left, err)
	}
	got, err := s.Releases(ctx, from)
	if err != nil || len(got) != maxReleased {
		t.Fatalf("Releases = %d, %v; want %d", len(got), err, maxReleased)
	}
}
