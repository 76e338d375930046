package main

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/approval"
	"github.com/rukpak/rukpak/internal/identity"
	"github.com/rukpak/rukpak/internal/inventory"
	"github.com/rukpak/rukpak/internal/manager"
)

// floorHex stands for a sha256 digest in the request floor's requests.
const floorHex = "3a3b0c70996c46b377bfd2efd4fbff9110050f7773d4e3c37e116b758b7491d9"

// The name prefixes of the request floor's two runs (and of their
// namespaces).
const (
	requestFloorBefore = "reqfloor0"
	requestFloorAfter  = "reqfloor"
)

// managerRequester is the requested-by annotations the manager writes on
// the Bundles it creates, for the user of cfg (the manager's).
func managerRequester(ctx context.Context, cfg *rest.Config) (map[string]string, error) {
	self, err := identity.CurrentUser(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("asking the API server who the bench is: %w", err)
	}
	return approval.RequesterAnnotations(self), nil
}

// requestFloorRun makes, as a bare client on c.concurrency workers, the
// requests rukpak's install of one plain bundle makes, for every bundle:
// the BundleDeployment's create, the Bundle's create, a create of each
// object, the inventory's create and the BundleDeployment's status patch
// (a first install makes no event). The BundleDeployments and Bundles name a class no
// controller serves (costClass), so the manager sees them, as it sees its
// own, but installs nothing: what is measured is what the API server
// charges for rukpak's requests before the manager does any work.
//
// It runs twice, under the name prefixes requestFloorBefore (before
// rukpak's install) and requestFloorAfter (with the peers), as the SSA
// floor does: this machine's speed drifts, and a cluster that holds the
// installs before it serves later runs more slowly.
func requestFloorRun(ctx context.Context, c config, k client.Client, prefix string) error {
	if err := k.Create(ctx, &v1alpha2.ProvisionerClass{ObjectMeta: metav1.ObjectMeta{Name: costClass},
		Spec: v1alpha2.ProvisionerClassSpec{ControllerName: "bench.rukpak.io/nobody"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ProvisionerClass: %w", err)
	}
	if err := parallel(c.bundles, c.concurrency, func(i int) error { return requestFloorBundle(ctx, c, k, prefix, i) }); err != nil {
		return fmt.Errorf("request floor: %w", err)
	}
	return nil
}

// requestFloorBundle makes the requests of one bundle's install, in the
// order the manager makes them, its objects' creates as many at once as
// the manager's.
func requestFloorBundle(ctx context.Context, c config, k client.Client, prefix string, i int) error {
	name := fmt.Sprintf("%s-%d", prefix, i)
	ns := fmt.Sprintf("%s-%d", prefix, i%c.namespaces)
	bd := bundleDeployment(i, c.namespaces)
	bd.Name, bd.Spec.ProvisionerClassName, bd.Spec.InstallNamespace = name, costClass, ns
	if err := k.Create(ctx, bd); err != nil {
		return fmt.Errorf("creating BundleDeployment: %w", err)
	}
	bundle := name + "-0123456789"
	pinned := floorPinned(bd.Spec.Sources)
	if err := k.Create(ctx, floorBundle(c, bd, bundle, pinned)); err != nil {
		return fmt.Errorf("creating Bundle: %w", err)
	}
	// A bundle's objects at once, as many as the manager applies at once
	// (its --apply-concurrency).
	objects := make([]client.Object, c.objects)
	if err := parallel(c.objects, managerApplyConcurrency(c), func(j int) error {
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("b%d-o%d", i, j), Namespace: ns},
			Data: map[string]string{"index": fmt.Sprint(j)}}
		if err := k.Create(ctx, obj, client.FieldOwner("reqfloor")); err != nil {
			return fmt.Errorf("creating object: %w", err)
		}
		objects[j] = obj
		return nil
	}); err != nil {
		return err
	}
	inv, err := floorInventory(name, bd.UID, objects)
	if err != nil {
		return err
	}
	if err := k.Create(ctx, inv); err != nil {
		return fmt.Errorf("creating inventory: %w", err)
	}
	base := bd.DeepCopy()
	floorStatus(bd, bundle, pinned, c.objects)
	if err := k.Status().Patch(ctx, bd, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("patching BundleDeployment status: %w", err)
	}
	return nil
}

// floorPinned is sources as the manager pins them (a ConfigMap source with
// its digest).
func floorPinned(sources []v1alpha2.BundleSource) []v1alpha2.BundleSource {
	pinned := make([]v1alpha2.BundleSource, len(sources))
	for s := range sources {
		sources[s].DeepCopyInto(&pinned[s])
		for j := range pinned[s].ConfigMaps {
			pinned[s].ConfigMaps[j].Digest = "sha256:" + floorHex
		}
	}
	return pinned
}

// floorBundle is the Bundle named name the manager creates as bd's first
// revision: labelled, controlled by bd, with its finalizer, its requester
// (the manager) and what it unpacked.
func floorBundle(c config, bd *v1alpha2.BundleDeployment, name string, pinned []v1alpha2.BundleSource) *v1alpha2.Bundle {
	return &v1alpha2.Bundle{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels:      map[string]string{v1alpha2.LabelBundleDeployment: bd.Name, v1alpha2.LabelRevision: "1"},
		Annotations: maps.Clone(c.requester),
		Finalizers:  []string{v1alpha2.FinalizerContent},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha2.GroupVersion.String(), Kind: "BundleDeployment",
			Name: bd.Name, UID: bd.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Spec: v1alpha2.BundleSpec{ProvisionerClassName: bd.Spec.ProvisionerClassName, Sources: pinned,
			Unpacked: &v1alpha2.UnpackRecord{ContentDigest: "sha256:" + floorHex,
				ContentURL: "http://127.0.0.1:29096/bundles/" + name, ObjectCount: int32(c.objects)}}}
}

// floorInventory is the inventory of BundleDeployment name (UID uid) as
// internal/inventory writes it after a first install of objects: one
// chunk, each object recorded with a hash and its resourceVersion.
func floorInventory(name string, uid types.UID, objects []client.Object) (*corev1.ConfigMap, error) {
	ids := make([]inventory.ID, len(objects))
	recs := make(map[inventory.ID]inventory.Record, len(objects))
	for j, obj := range objects {
		ids[j] = inventory.ID{Version: "v1", Kind: "ConfigMap", Namespace: obj.GetNamespace(), Name: obj.GetName()}
		recs[ids[j].Key()] = inventory.Record{Hash: floorHex[:32], ResourceVersion: obj.GetResourceVersion()}
	}
	chunks, err := inventory.Chunks(v1alpha2.SystemNamespace, inventory.Owner{Name: name, UID: uid}, ids, recs)
	if err != nil {
		return nil, fmt.Errorf("encoding inventory: %w", err)
	}
	return chunks[0], nil
}

// floorStatus sets bd's status to what the manager writes after a first
// install of revision bundle (objects objects from pinned).
func floorStatus(bd *v1alpha2.BundleDeployment, bundle string, pinned []v1alpha2.BundleSource, objects int) {
	now := metav1.Now()
	bd.Status.ActiveBundle, bd.Status.LastHealthyBundle, bd.Status.ObservedGeneration = bundle, bundle, 1
	bd.Status.InstalledObjects, bd.Status.ResolvedSources = int32(objects), pinned
	for _, cond := range []struct {
		t      string
		status metav1.ConditionStatus
		reason string
	}{{"Paused", metav1.ConditionFalse, "NotPaused"}, {v1alpha2.TypeUnpacked, metav1.ConditionTrue, "Unpacked"},
		{v1alpha2.TypeInstalled, metav1.ConditionTrue, "Installed"}, {v1alpha2.TypeHealthy, metav1.ConditionTrue, "Healthy"},
		{"Progressing", metav1.ConditionFalse, "Settled"}, {"Ready", metav1.ConditionTrue, "Ready"}} {
		meta.SetStatusCondition(&bd.Status.Conditions, metav1.Condition{Type: cond.t, Status: cond.status, Reason: cond.reason,
			Message: fmt.Sprintf("revision %s installed: %d objects", bundle, objects), ObservedGeneration: 1, LastTransitionTime: now})
	}
}

// managerApplyConcurrency is how many objects of one revision the bench's
// manager applies at once: -apply-concurrency, or the manager's default.
func managerApplyConcurrency(c config) int {
	if c.applyConcurrency > 0 {
		return c.applyConcurrency
	}
	return manager.DefaultEngineOptions().ApplyConcurrency
}
