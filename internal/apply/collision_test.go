//go:build integration

package apply_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/inventory"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// TestCollisionsWithStaleOwners: an object labelled for a BundleDeployment
// that no longer exists, or for one of the same name but another UID, is
// taken when that BundleDeployment released it (its release record says
// so) and no other took it first; else it is a collision under Prevent
// (naming the object and the stale owner, and that it was not released),
// and the other policies adopt it as they adopt unmanaged objects. A live
// owner that holds the object blocks it whatever the policy; one that
// released it hands it over; one whose revision dropped it without
// releasing it (labels someone else wrote) does not.
func TestCollisionsWithStaleOwners(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	me := apply.Owner{Name: "me", Revision: "me-1", UID: "uid-me"}
	// What the owners named in labels make of their objects.
	owners := map[string]apply.OwnerState{"live-uid": apply.OwnerHolds, "released-uid": apply.OwnerReleased, "dropped-uid": apply.OwnerReleased}
	lookup := func(_ context.Context, other string, uid types.UID, _ inventory.ID) (apply.OwnerState, error) {
		if s, ok := owners[string(uid)]; ok && other == "other" {
			return s, nil
		}
		return apply.OwnerGone, nil
	}
	// What the release records say, by the releaser's UID.
	records := map[string]inventory.TakeVerdict{"released-uid": inventory.Granted, "uid-released": inventory.Granted, "uid-taken": inventory.TakenByOther}
	take := func(_ context.Context, r apply.Release) (inventory.TakeVerdict, string, error) {
		if r.Object == "" {
			return inventory.NotReleased, "", fmt.Errorf("asked to take %s without its UID", r.ID)
		}
		v := records[string(r.UID)]
		if v == inventory.TakenByOther {
			return v, "third", nil
		}
		return v, "", nil
	}
	controller := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "pod-uid", Controller: ptr.To(true)}}
	tests := []struct {
		name       string
		labels     map[string]string
		controller bool
		policy     apply.CollisionPolicy
		owned      bool
		wantRefuse string // "" means applied
		// wantHeldBy is the owner the refusal says holds the object
		// (apply.Error.Held), "" for none.
		wantHeldBy string
	}{
		{name: "own object", labels: owned("me", "uid-me")},
		{name: "same name, other uid, Prevent", labels: owned("me", "uid-old"),
			wantRefuse: "labelled as managed by BundleDeployment me (uid uid-old), which no longer exists"},
		{name: "same name, no uid, Prevent", labels: owned("me", ""),
			wantRefuse: "labelled as managed by BundleDeployment me (no uid recorded), which no longer exists"},
		{name: "same name, no uid, in the inventory", labels: owned("me", ""), owned: true},
		{name: "deleted owner, Prevent (default)", labels: owned("gone", "uid-gone"),
			wantRefuse: "labelled as managed by BundleDeployment gone (uid uid-gone), which no longer exists"},
		{name: "deleted owner, IfNoController", labels: owned("gone", "uid-gone"), policy: apply.CollisionIfNoController},
		{name: "deleted owner with a controller, IfNoController", labels: owned("gone", "uid-gone"), controller: true,
			policy: apply.CollisionIfNoController, wantRefuse: "which no longer exists (a stale owner) and did not release it"},
		{name: "deleted owner released it", labels: owned("gone", "uid-released")},
		{name: "same name, other uid, released", labels: owned("me", "uid-released")},
		{name: "deleted owner released it, another took it, even with None", labels: owned("gone", "uid-taken"), policy: apply.CollisionNone,
			wantRefuse: "which BundleDeployment gone left in place, is being taken over by BundleDeployment third"},
		{name: "live owner dropped it without releasing it", labels: owned("other", "dropped-uid"),
			wantRefuse: "whose installed revision does not have it, and other did not release it"},
		{name: "live owner dropped it without releasing it, None", labels: owned("other", "dropped-uid"), policy: apply.CollisionNone},
		{name: "deleted owner, None", labels: owned("gone", "uid-gone"), policy: apply.CollisionNone},
		{name: "recreated owner (other uid)", labels: owned("other", "uid-before"),
			wantRefuse: "BundleDeployment other (uid uid-before), which no longer exists"},
		{name: "live owner holds it, even with None", labels: owned("other", "live-uid"), policy: apply.CollisionNone,
			wantRefuse: "is managed by BundleDeployment other; it can move here only once", wantHeldBy: "other"},
		{name: "live owner released it", labels: owned("other", "released-uid")},
		{name: "owner kind without a name", labels: map[string]string{testKeys.OwnerKind: testOwnerKind},
			wantRefuse: "exists and is not managed by this BundleDeployment"},
		{name: "unmanaged", labels: nil, wantRefuse: "exists and is not managed by this BundleDeployment"},
	}
	ns := envtest.UniqueName("collide")
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "obj-" + string(rune('a'+i))
			existing := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: tt.labels}, Data: map[string]string{"value": "theirs"}}
			if tt.controller {
				existing.OwnerReferences = controller
			}
			if err := env.Client.Create(ctx, existing); err != nil {
				t.Fatal(err)
			}
			p, err := e.Prepare(objs(t, cm(name, ns, "mine")), ns, me)
			if err != nil {
				t.Fatal(err)
			}
			c := &apply.Collisions{Policy: tt.policy, Owned: map[inventory.ID]bool{}, Owner: lookup, Take: take}
			if tt.owned {
				c.Owned[p.IDs()[0].Key()] = true
			}
			_, err = e.Apply(ctx, p, apply.ApplyOptions{Collisions: c})
			got := &corev1.ConfigMap{}
			if gerr := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, got); gerr != nil {
				t.Fatal(gerr)
			}
			if tt.wantRefuse == "" {
				if err != nil {
					t.Fatalf("Apply: %v; want it applied", err)
				}
				if got.Data["value"] != "mine" || got.Labels[testKeys.OwnerUID] != "uid-me" {
					t.Fatalf("object after apply: data %v labels %v; want it taken, labelled with uid-me", got.Data, got.Labels)
				}
				return
			}
			if apply.CodeOf(err) != apply.CodeCollision || !strings.Contains(err.Error(), tt.wantRefuse) ||
				!strings.Contains(err.Error(), "ConfigMap "+ns+"/"+name) {
				t.Fatalf("Apply: %v; want a Collision naming %s and containing %q", err, name, tt.wantRefuse)
			}
			if got.Data["value"] != "theirs" {
				t.Fatalf("refused object was changed: %v", got.Data)
			}
			var wantHeld []apply.Held
			if tt.wantHeldBy != "" {
				wantHeld = []apply.Held{{ID: p.IDs()[0], By: tt.wantHeldBy}}
			}
			if held := apply.As(err).Held(); !reflect.DeepEqual(held, wantHeld) {
				t.Fatalf("Held = %+v, want %+v", held, wantHeld)
			}
		})
	}
}

// TestPruneSkipsObjectsOfAnotherUID: pruning as a BundleDeployment leaves
// alone an object labelled with its name but another UID (one a deleted
// BundleDeployment of the same name left behind).
func TestPruneSkipsObjectsOfAnotherUID(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	ns := envtest.UniqueName("pruneuid")
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	for name, uid := range map[string]string{"old": "uid-old", "new": "uid-new"} {
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: owned("me", uid)}}
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	ids := []inventory.ID{{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "old"}, {Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "new"}}
	cs, err := e.Prune(ctx, "me", ids, apply.PruneOptions{OwnerUID: "uid-new"})
	if err != nil {
		t.Fatal(err)
	}
	got := actions(cs)
	if got["ConfigMap/old"] != apply.Skipped || got["ConfigMap/new"] != apply.Deleted {
		t.Fatalf("prune actions = %v; want old skipped, new deleted", got)
	}
	if !exists(t, "v1", "ConfigMap", ns, "old") {
		t.Fatal("the object of the other uid was deleted")
	}
}

func owned(name, uid string) map[string]string {
	l := map[string]string{testKeys.OwnerKind: testOwnerKind, testKeys.OwnerName: name}
	if uid != "" {
		l[testKeys.OwnerUID] = uid
	}
	return l
}
