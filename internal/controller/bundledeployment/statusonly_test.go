//go:build integration

package bundledeployment_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// guardOwner is the field manager of this file's own writes of
// BundleDeployments, so that every other write is the manager's.
const guardOwner = "status-only-guard"

// TestReconcileChangesOnlyStatus drives BundleDeployments through the
// representative cases — an install, an upgrade, a revision held for
// approval, a revision held as failed, a rollback after a missed progress
// deadline — and checks after each that the reconciles changed nothing of
// the BundleDeployment but its status and the cleanup finalizer: its spec,
// generation, labels, annotations and owner references are as this test
// last wrote them, and every field the manager ever wrote outside the
// status subresource (managedFields) is metadata.finalizers.
func TestReconcileChangesOnlyStatus(t *testing.T) {
	plain := func(ns, cm string) *v1alpha2.BundleDeployment {
		return &v1alpha2.BundleDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("bd")},
			Spec:       v1alpha2.BundleDeploymentSpec{ProvisionerClassName: v1alpha2.ClassPlain, InstallNamespace: ns, Sources: source(cm)},
		}
	}
	t.Run("install", func(t *testing.T) {
		t.Parallel()
		ns := envtest.UniqueName("guard")
		wrote := guardCreate(t, plain(ns, manifests(t, map[string]string{"a.yaml": cmYAML("a", "v1")})))
		waitCondition(t, wrote.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
		assertStatusOnly(t, wrote)
	})
	t.Run("upgrade", func(t *testing.T) {
		t.Parallel()
		ns := envtest.UniqueName("guard")
		wrote := guardCreate(t, plain(ns, manifests(t, map[string]string{"a.yaml": cmYAML("a", "v1")})))
		rev1 := waitCondition(t, wrote.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled).Status.ActiveBundle
		assertStatusOnly(t, wrote)
		v2 := source(manifests(t, map[string]string{"a.yaml": cmYAML("a", "v2")}))
		wrote = guardUpdate(t, wrote.Name, func(b *v1alpha2.BundleDeployment) { b.Spec.Sources = v2 })
		envtest.Eventually(t, 30*time.Second, func() error {
			bd := waitCondition(t, wrote.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
			if bd.Status.ActiveBundle == rev1 {
				return fmt.Errorf("active revision still %s", rev1)
			}
			return nil
		})
		assertStatusOnly(t, wrote)
	})
	t.Run("held for approval", func(t *testing.T) {
		t.Parallel()
		ns := envtest.UniqueName("guard")
		role := envtest.UniqueName("guard-role")
		bd := plain(ns, manifests(t, gatedRBAC(role, "v1", "configmaps")))
		bd.Spec.Upgrade = &v1alpha2.UpgradePolicy{ApprovalPolicy: v1alpha2.ApprovalPowerGrowth}
		wrote := guardCreate(t, bd)
		rev1 := waitCondition(t, wrote.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled).Status.ActiveBundle
		grown := source(manifests(t, gatedRBAC(role, "v2", "configmaps", "secrets")))
		wrote = guardUpdate(t, wrote.Name, func(b *v1alpha2.BundleDeployment) { b.Spec.Sources = grown })
		waitAwaiting(t, wrote.Name, rev1)
		assertStatusOnly(t, wrote)
	})
	t.Run("held as failed", func(t *testing.T) {
		t.Parallel()
		ns := envtest.UniqueName("guard")
		wrote := guardCreate(t, plain(ns, manifests(t, map[string]string{"a.yaml": cmYAML("a", "v1")})))
		waitCondition(t, wrote.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
		bad := source(manifests(t, map[string]string{
			"a.yaml": cmYAML("a", "v2"),
			"c.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: broken\nspec:\n  ports:\n  - port: 99999\n",
		}))
		wrote = guardUpdate(t, wrote.Name, func(b *v1alpha2.BundleDeployment) { b.Spec.Sources = bad })
		envtest.Eventually(t, 30*time.Second, func() error {
			bd := waitCondition(t, wrote.Name, v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonValidationFailed)
			if bd.Status.FailedBundle == "" {
				return fmt.Errorf("no failed revision recorded")
			}
			return nil
		})
		assertStatusOnly(t, wrote)
	})
	t.Run("rollback", func(t *testing.T) {
		t.Parallel()
		ns := envtest.UniqueName("guard")
		bd := plain(ns, manifests(t, map[string]string{"a.yaml": readyCM("app", "true", "v1")}))
		bd.Spec.HealthChecks = &v1alpha2.HealthChecks{ProgressDeadlineSeconds: ptr.To[int32](2), Probes: []v1alpha2.Probe{readyProbe}}
		wrote := guardCreate(t, bd)
		waitCondition(t, wrote.Name, v1alpha2.TypeHealthy, metav1.ConditionTrue, v1alpha2.ReasonHealthy)
		never := source(manifests(t, map[string]string{"a.yaml": readyCM("app", "false", "v2")}))
		wrote = guardUpdate(t, wrote.Name, func(b *v1alpha2.BundleDeployment) { b.Spec.Sources = never })
		waitCondition(t, wrote.Name, v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonRolledBack)
		assertStatusOnly(t, wrote)
	})
}

// guardCreate creates bd as guardOwner, deleted when the test ends, and
// returns it as created.
func guardCreate(t *testing.T, bd *v1alpha2.BundleDeployment) *v1alpha2.BundleDeployment {
	t.Helper()
	if err := env.Client.Create(context.Background(), bd, client.FieldOwner(guardOwner)); err != nil {
		t.Fatalf("creating BundleDeployment: %v", err)
	}
	t.Cleanup(func() { deleteAndWait(t, bd.Name) })
	return bd.DeepCopy()
}

// guardUpdate changes BundleDeployment name's spec or metadata with
// mutate, as guardOwner, and returns it as updated.
func guardUpdate(t *testing.T, name string, mutate func(*v1alpha2.BundleDeployment)) *v1alpha2.BundleDeployment {
	t.Helper()
	bd := &v1alpha2.BundleDeployment{}
	envtest.Eventually(t, 10*time.Second, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
			return err
		}
		mutate(bd)
		return env.Client.Update(context.Background(), bd, client.FieldOwner(guardOwner))
	})
	return bd.DeepCopy()
}

// assertStatusOnly fails t unless BundleDeployment wrote.Name is, but for
// its status and the cleanup finalizer, as this test last wrote it
// (wrote), and unless every field written by another field manager than
// guardOwner outside the status subresource is metadata.finalizers.
func assertStatusOnly(t *testing.T, wrote *v1alpha2.BundleDeployment) {
	t.Helper()
	got := &v1alpha2.BundleDeployment{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: wrote.Name}, got); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(got.Spec, wrote.Spec) || got.Generation != wrote.Generation {
		t.Errorf("spec changed by the reconciler (generation %d, written at %d):\n got %+v\nwant %+v", got.Generation, wrote.Generation, got.Spec, wrote.Spec)
	}
	if !equality.Semantic.DeepEqual(got.Labels, wrote.Labels) || !equality.Semantic.DeepEqual(got.Annotations, wrote.Annotations) {
		t.Errorf("labels or annotations changed by the reconciler: labels %v annotations %v, want %v %v", got.Labels, got.Annotations, wrote.Labels, wrote.Annotations)
	}
	if !equality.Semantic.DeepEqual(got.OwnerReferences, wrote.OwnerReferences) {
		t.Errorf("ownerReferences changed by the reconciler: %v, want %v", got.OwnerReferences, wrote.OwnerReferences)
	}
	for _, f := range got.Finalizers {
		if f != v1alpha2.FinalizerCleanup && !slices.Contains(wrote.Finalizers, f) {
			t.Errorf("finalizer %s added by the reconciler", f)
		}
	}
	for _, mf := range got.ManagedFields {
		if mf.Manager == guardOwner || mf.Subresource == "status" || mf.FieldsV1 == nil {
			continue
		}
		var fields map[string]map[string]any
		if err := json.Unmarshal(mf.FieldsV1.Raw, &fields); err != nil {
			t.Fatalf("managedFields of %s: %v", mf.Manager, err)
		}
		for top, sub := range fields {
			for field := range sub {
				if top != "f:metadata" || field != "f:finalizers" {
					t.Errorf("%s (%s) wrote %s.%s of the BundleDeployment: only its status and finalizers are the reconciler's", mf.Manager, mf.Operation, top, field)
				}
			}
		}
	}
}
