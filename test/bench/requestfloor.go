package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/manager"
)

// The name prefixes of the request floor's two runs (and of their
// namespaces).
const (
	requestFloorBefore = "reqfloor0"
	requestFloorAfter  = "reqfloor"
)

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
	if err := k.Create(ctx, &v1alpha2.Bundle{ObjectMeta: metav1.ObjectMeta{Name: bundle,
		Labels: map[string]string{v1alpha2.LabelBundleDeployment: name}},
		Spec: v1alpha2.BundleSpec{ProvisionerClassName: costClass, Sources: bd.Spec.Sources}}); err != nil {
		return fmt.Errorf("creating Bundle: %w", err)
	}
	// A bundle's objects at once, as many as the manager applies at once
	// (its --apply-concurrency).
	ids := make([]string, c.objects)
	if err := parallel(c.objects, managerApplyConcurrency(c), func(j int) error {
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("b%d-o%d", i, j), Namespace: ns},
			Data: map[string]string{"index": fmt.Sprint(j)}}
		if err := k.Create(ctx, obj, client.FieldOwner("reqfloor")); err != nil {
			return fmt.Errorf("creating object: %w", err)
		}
		ids[j] = ns + "/" + obj.Name + "//ConfigMap v1 " + obj.ResourceVersion
		return nil
	}); err != nil {
		return err
	}
	var records bytes.Buffer
	zw := gzip.NewWriter(&records)
	if err := json.NewEncoder(zw).Encode(ids); err != nil {
		return fmt.Errorf("encoding inventory: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("encoding inventory: %w", err)
	}
	// As internal/inventory writes it: one chunk of gzipped records.
	if err := k.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "inventory-" + string(bd.UID), Namespace: v1alpha2.SystemNamespace,
		Labels:      map[string]string{"core.rukpak.io/inventory-of": name, "core.rukpak.io/inventory-uid": string(bd.UID)},
		Annotations: map[string]string{"core.rukpak.io/inventory-generation": "0123456789abcdef", "core.rukpak.io/chunks": "1"}},
		BinaryData: map[string][]byte{"ids.gz": records.Bytes()}}); err != nil {
		return fmt.Errorf("creating inventory: %w", err)
	}
	base := bd.DeepCopy()
	now := metav1.Now()
	bd.Status.ActiveBundle, bd.Status.ObservedGeneration = bundle, 1
	for _, t := range []string{v1alpha2.TypeUnpacked, v1alpha2.TypeInstalled, v1alpha2.TypeHealthy, "Progressing", "Ready"} {
		meta.SetStatusCondition(&bd.Status.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: "Installed",
			Message: fmt.Sprintf("revision %s installed: %d objects", bundle, c.objects), ObservedGeneration: 1, LastTransitionTime: now})
	}
	if err := k.Status().Patch(ctx, bd, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("patching BundleDeployment status: %w", err)
	}
	return nil
}

// managerApplyConcurrency is how many objects of one revision the bench's
// manager applies at once: -apply-concurrency, or the manager's default.
func managerApplyConcurrency(c config) int {
	if c.applyConcurrency > 0 {
		return c.applyConcurrency
	}
	return manager.DefaultEngineOptions().ApplyConcurrency
}
