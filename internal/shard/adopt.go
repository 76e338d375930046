package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// Adopter prepares each BundleDeployment for its first reconcile by this
// manager. A BundleDeployment relabelled to another shard reaches the new
// shard's cache before its Bundles do (they still carry the old shard's
// label): the new shard moves them, and drops the ShardAvailable
// condition the Reporter may have written while no shard served it. It
// writes nothing else: the objects the BundleDeployment installed are as
// the previous shard applied them, and the reconcile that follows finds
// them so.
type Adopter struct {
	// Cache is the manager's cache (this shard's Bundles).
	Cache client.Reader
	// API lists Bundles outside the cache.
	API client.Reader
	// Client writes the Bundles' labels and the status.
	Client client.Client

	// adopted remembers the BundleDeployments (by name) whose Bundles
	// this process found on its shard, with their UID and the shard they
	// were found on (adoptedOn), so that their Bundles are listed once,
	// not at every reconcile; Forget drops one.
	adopted sync.Map
}

// adoptedOn is what Adopter.adopted remembers of a BundleDeployment.
type adoptedOn struct {
	uid   types.UID
	shard string
}

// Forget drops what the Adopter remembers of the BundleDeployment name
// (it is gone).
func (a *Adopter) Forget(name string) { a.adopted.Delete(name) }

// Adopt reports whether bd can be reconciled now: false when it moved
// Bundles or cleared the condition, which the cache must show before a
// reconcile reads it (requeue shortly).
func (a *Adopter) Adopt(ctx context.Context, bd *v1alpha2.BundleDeployment) (bool, error) {
	if meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeShardAvailable) != nil {
		base := bd.DeepCopy()
		meta.RemoveStatusCondition(&bd.Status.Conditions, v1alpha2.TypeShardAvailable)
		if err := a.Client.Status().Patch(ctx, bd, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return false, fmt.Errorf("clearing %s: %w", v1alpha2.TypeShardAvailable, err)
		}
		return false, nil
	}
	// The active revision's Bundle in the cache: nothing to move (the
	// reconcile of every BundleDeployment that installed something). One
	// without it (none installed yet, or just relabelled) has its
	// Bundles listed from the API server's watch cache.
	if bd.Status.ActiveBundle != "" {
		err := a.Cache.Get(ctx, client.ObjectKey{Name: bd.Status.ActiveBundle}, &v1alpha2.Bundle{})
		if err == nil {
			return true, nil
		}
		if !apierrors.IsNotFound(err) {
			return false, err
		}
	}
	if !mayHaveBundles(bd) {
		return true, nil
	}
	// One with no active revision (a first install that failed) is
	// listed once per shard it is found on: its reconciles do not list
	// again. One whose active Bundle the cache misses is always listed.
	want, _ := Of(bd)
	on := adoptedOn{uid: bd.UID, shard: want}
	memo := bd.Status.ActiveBundle == ""
	if was, ok := a.adopted.Load(bd.Name); memo && ok && was == on {
		return true, nil
	}
	moved, err := a.moveBundles(ctx, bd)
	if moved == 0 && err == nil {
		if memo {
			a.adopted.Store(bd.Name, on)
		}
		return true, nil
	}
	return false, err
}

// mayHaveBundles reports whether bd may have Bundles its shard's cache
// does not show: not when no manager ever wrote its status (a new
// BundleDeployment: its first reconcile creates its first Bundle, with
// its label), so that installing one costs no list.
func mayHaveBundles(bd *v1alpha2.BundleDeployment) bool {
	return bd.Status.ActiveBundle != "" || len(bd.Status.Conditions) > 0 || bd.Status.ObservedGeneration != 0
}

// moveBundles labels bd's Bundles with its shard and returns how many it
// changed.
func (a *Adopter) moveBundles(ctx context.Context, bd *v1alpha2.BundleDeployment) (int, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(v1alpha2.GroupVersion.WithKind("BundleList"))
	if err := a.API.List(ctx, list, client.MatchingLabels{v1alpha2.LabelBundleDeployment: bd.Name},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}}); err != nil {
		return 0, fmt.Errorf("listing the Bundles of %s: %w", bd.Name, err)
	}
	want, sharded := Of(bd)
	var value any // nil removes the label
	if sharded {
		value = want
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{v1alpha2.LabelShard: value}}})
	if err != nil {
		return 0, err
	}
	moved := 0
	for i := range list.Items {
		b := &list.Items[i]
		if !Owned(bd, b) {
			continue
		}
		if have, ok := Of(b); ok == sharded && have == want {
			continue
		}
		if err := a.Client.Patch(ctx, b, client.RawPatch(types.MergePatchType, patch)); err != nil && !apierrors.IsNotFound(err) {
			return moved, fmt.Errorf("moving Bundle %s to shard %q: %w", b.Name, want, err)
		}
		moved++
	}
	return moved, nil
}

// Owned reports whether b is controlled by bd (its ownerReference names
// bd's UID): a Bundle merely labelled with bd's name is not moved.
func Owned(bd *v1alpha2.BundleDeployment, b metav1.Object) bool {
	ref := metav1.GetControllerOf(b)
	return ref != nil && ref.UID == bd.UID
}

// CopyLabel gives to, a child of from, from's shard label.
func CopyLabel(from, to metav1.Object) {
	s, ok := Of(from)
	if !ok {
		return
	}
	l := to.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[v1alpha2.LabelShard] = s
	to.SetLabels(l)
}
