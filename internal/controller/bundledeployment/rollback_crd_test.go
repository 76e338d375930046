//go:build integration

package bundledeployment_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// gizmoCRD is a CRD of kind %[2]s, plural %[1]s, with the versions
// %[4]s (each a "- name: ..." entry).
const gizmoCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[1]s.example.com
spec:
  group: example.com
  names: {kind: %[2]s, listKind: %[2]sList, plural: %[1]s, singular: %[3]s}
  scope: Namespaced
  versions:
%[4]s`

// gizmoVersion is one entry of a CRD's versions.
func gizmoVersion(name string, served, storage bool) string {
	return gizmoVersionWith(name, served, storage, "")
}

// gizmoVersionWith is one entry of a CRD's versions whose spec has
// color and the properties props (indented YAML lines).
func gizmoVersionWith(name string, served, storage bool, props string) string {
	return fmt.Sprintf(`  - name: %s
    served: %t
    storage: %t
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              color: {type: string}
%s`, name, served, storage, props)
}

// gizmo names a CRD of its own for one test: plural, kind, and its YAML
// with versions.
func gizmo(t *testing.T) (plural, kind string, crd func(versions ...string) string) {
	t.Helper()
	plural = envtest.UniqueName("gizmos")
	kind = "G" + strings.ReplaceAll(plural[len("gizmos-"):], "-", "")
	return plural, kind, func(versions ...string) string {
		return fmt.Sprintf(gizmoCRD, plural, kind, strings.ToLower(kind), strings.Join(versions, ""))
	}
}

// crBD creates a BundleDeployment whose ConfigMaps are probed for
// data.ready, with a progress deadline of deadline seconds.
func crBD(t *testing.T, ns string, files map[string]string, deadline int32) *v1alpha2.BundleDeployment {
	t.Helper()
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("bd")},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     ns,
			Sources:              source(manifests(t, files)),
			HealthChecks:         &v1alpha2.HealthChecks{ProgressDeadlineSeconds: ptr.To(deadline), Probes: []v1alpha2.Probe{readyProbe}},
		},
	}
	if err := env.Client.Create(context.Background(), bd); err != nil {
		t.Fatal(err)
	}
	return bd
}

// crdServes reads the CRD and returns the versions it serves.
func crdServes(t *testing.T, name string) ([]string, []string) {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
		t.Fatal(err)
	}
	var served []string
	for _, v := range crd.Spec.Versions {
		if v.Served {
			served = append(served, v.Name)
		}
	}
	return served, crd.Status.StoredVersions
}

// waitEvent waits for an event of reason about the BundleDeployment whose
// note contains want.
func waitEvent(t *testing.T, bdName, reason, want string) {
	t.Helper()
	envtest.Eventually(t, 30*time.Second, func() error {
		list := &eventsv1.EventList{}
		if err := env.Client.List(context.Background(), list); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Name == bdName && e.Reason == reason && strings.Contains(e.Note, want) {
				return nil
			}
		}
		return fmt.Errorf("no %s event about %s containing %q", reason, bdName, want)
	})
}

// storeCR writes a custom resource of kind at version in ns.
func storeCR(t *testing.T, version, kind, ns, name string) {
	t.Helper()
	cr := &unstructured.Unstructured{}
	cr.SetAPIVersion("example.com/" + version)
	cr.SetKind(kind)
	cr.SetNamespace(ns)
	cr.SetName(name)
	_ = unstructured.SetNestedField(cr.Object, "blue", "spec", "color")
	envtest.Eventually(t, 20*time.Second, func() error { return env.Client.Create(context.Background(), cr) })
}

// TestRollbackKeepsCRDWithStoredVersion: revision 2 adds v2 (served, the
// storage version) to a CRD and a custom resource is written in v2; it is
// never healthy, so it is rolled back to revision 1, whose CRD has v1
// only. The CRD keeps revision 2's definition (v2 is stored), the custom
// resource stays readable, the rest of revision 1 is back, and the status
// and a CRDKept event say so.
func TestRollbackKeepsCRDWithStoredVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := envtest.UniqueName("rbcrd")
	plural, kind, crd := gizmo(t)
	crdName := plural + ".example.com"
	bd := crBD(t, ns, map[string]string{
		"crd.yaml": crd(gizmoVersion("v1", true, true)),
		"a.yaml":   readyCM("app", "true", "v1"),
		"b.yaml":   readyCM("extra", "true", "v1"),
	}, 6)
	bd = waitCondition(t, bd.Name, v1alpha2.TypeHealthy, metav1.ConditionTrue, v1alpha2.ReasonHealthy)
	good := bd.Status.ActiveBundle

	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) {
		b.Spec.Sources = source(manifests(t, map[string]string{
			"crd.yaml": crd(gizmoVersion("v1", true, false), gizmoVersion("v2", true, true)),
			"a.yaml":   readyCM("app", "false", "v2"),
		}))
	})
	storeCR(t, "v2", kind, ns, "g1")

	bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonRolledBack)
	if bd.Status.ActiveBundle != good {
		t.Fatalf("active %s, want %s (rolled back)", bd.Status.ActiveBundle, good)
	}
	msg := installedMessage(bd)
	for _, want := range []string{"kept the newer definition of CRD " + crdName, "stored versions v1, v2"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("Installed message %q lacks %q", msg, want)
		}
	}
	if !slices.Equal(bd.Status.KeptCRDs, []string{crdName}) {
		t.Fatalf("status.keptCRDs = %v, want [%s]", bd.Status.KeptCRDs, crdName)
	}
	served, stored := crdServes(t, crdName)
	if !strings.Contains(strings.Join(served, ","), "v2") {
		t.Fatalf("CRD serves %v (stored %v): the newer definition should be kept", served, stored)
	}
	cr := &unstructured.Unstructured{}
	cr.SetAPIVersion("example.com/v2")
	cr.SetKind(kind)
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "g1"}, cr); err != nil {
		t.Fatalf("custom resource stored in v2 unreadable after the rollback: %v", err)
	}
	waitValue(t, ns, "app", "v1")
	waitValue(t, ns, "extra", "v1")
	waitEvent(t, bd.Name, v1alpha2.ReasonCRDKept, crdName)

	// Settled on revision 1, the kept CRD is not "corrected" back.
	waitCondition(t, bd.Name, v1alpha2.TypeHealthy, metav1.ConditionTrue, v1alpha2.ReasonHealthy)
	if served, _ := crdServes(t, crdName); !strings.Contains(strings.Join(served, ","), "v2") {
		t.Fatalf("CRD serves %v after the rollback settled, want v2 kept", served)
	}
	// Still owned: not pruned.
	got := getBD(t, bd.Name)
	if !strings.Contains(installedMessage(got), crdName) {
		t.Fatalf("Installed message %q no longer names the kept CRD", installedMessage(got))
	}
}

// TestRollbackUnsafeHolds: revision 1 has a custom resource in v1;
// revision 2 stops serving v1 (v2 is stored) and drops it (accepted with
// crdUpgradeSafety None, which leaves the stored-versions rule). Keeping the
// newer CRD would leave revision 1's custom resource unservable, so the
// rollback is not made at all: revision 2 stays, RollbackUnsafe names
// the CRD and its stored versions.
func TestRollbackUnsafeHolds(t *testing.T) {
	t.Parallel()
	ns := envtest.UniqueName("rbunsafe")
	plural, kind, crd := gizmo(t)
	crdName := plural + ".example.com"
	cr := fmt.Sprintf("apiVersion: example.com/v1\nkind: %s\nmetadata:\n  name: g1\nspec:\n  color: blue\n", kind)
	bd := crBD(t, ns, map[string]string{
		"crd.yaml": crd(gizmoVersion("v1", true, true)),
		"cr.yaml":  cr,
		"a.yaml":   readyCM("app", "true", "v1"),
	}, 3)
	bd = waitCondition(t, bd.Name, v1alpha2.TypeHealthy, metav1.ConditionTrue, v1alpha2.ReasonHealthy)
	good := bd.Status.ActiveBundle

	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) {
		b.Spec.Sources = source(manifests(t, map[string]string{
			"crd.yaml": crd(gizmoVersion("v1", false, false), gizmoVersion("v2", true, true)),
			"a.yaml":   readyCM("app", "false", "v2"),
		}))
		b.Spec.Upgrade = &v1alpha2.UpgradePolicy{CRDUpgradeSafety: v1alpha2.CRDUpgradeSafetyNone}
	})
	bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonRollbackUnsafe)
	msg := installedMessage(bd)
	for _, want := range []string{crdName, "stored versions v1, v2", "nothing of it was written"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("Installed message %q lacks %q", msg, want)
		}
	}
	if bd.Status.ActiveBundle == good || bd.Status.FailedBundle != bd.Status.ActiveBundle {
		t.Fatalf("active %s failed %s: the failed revision should stay", bd.Status.ActiveBundle, bd.Status.FailedBundle)
	}
	waitValue(t, ns, "app", "v2")
	if served, _ := crdServes(t, crdName); strings.Join(served, ",") != "v2" {
		t.Fatalf("CRD serves %v, want revision 2's definition (v2 only)", served)
	}
}

// TestSpecRollbackKeepsCRD: the spec names revision 1 again (as rukpakctl
// rollback writes it) after a healthy revision 2 added v2 to the CRD and a
// custom resource was stored in v2. Revision 1 is installed without its
// CRD, which keeps v2, rather than refused as an unsafe CRD upgrade.
func TestSpecRollbackKeepsCRD(t *testing.T) {
	t.Parallel()
	ns := envtest.UniqueName("specrb")
	plural, kind, crd := gizmo(t)
	crdName := plural + ".example.com"
	rev1 := source(manifests(t, map[string]string{
		"crd.yaml": crd(gizmoVersion("v1", true, true)),
		"a.yaml":   readyCM("app", "true", "v1"),
	}))
	bd := crBD(t, ns, map[string]string{"placeholder.yaml": readyCM("app", "true", "v0")}, 30)
	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) { b.Spec.Sources = rev1 })
	waitValue(t, ns, "app", "v1")
	bd = waitCondition(t, bd.Name, v1alpha2.TypeHealthy, metav1.ConditionTrue, v1alpha2.ReasonHealthy)
	first := bd.Status.ActiveBundle

	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) {
		b.Spec.Sources = source(manifests(t, map[string]string{
			"crd.yaml": crd(gizmoVersion("v1", true, false), gizmoVersion("v2", true, true)),
			"a.yaml":   readyCM("app", "true", "v2"),
		}))
	})
	waitValue(t, ns, "app", "v2")
	storeCR(t, "v2", kind, ns, "g1")
	waitCondition(t, bd.Name, v1alpha2.TypeHealthy, metav1.ConditionTrue, v1alpha2.ReasonHealthy)

	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) { b.Spec.Sources = rev1 })
	bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	if bd.Status.ActiveBundle != first {
		t.Fatalf("active %s, want revision 1 (%s) again", bd.Status.ActiveBundle, first)
	}
	if msg := installedMessage(bd); !strings.Contains(msg, "kept the newer definition of CRD "+crdName) {
		t.Fatalf("Installed message %q does not name the kept CRD", msg)
	}
	if !slices.Equal(bd.Status.KeptCRDs, []string{crdName}) {
		t.Fatalf("status.keptCRDs = %v, want [%s]", bd.Status.KeptCRDs, crdName)
	}
	waitValue(t, ns, "app", "v1")
	if served, _ := crdServes(t, crdName); !strings.Contains(strings.Join(served, ","), "v2") {
		t.Fatalf("CRD serves %v, want v2 kept", served)
	}
	waitEvent(t, bd.Name, v1alpha2.ReasonCRDKept, crdName)
}

// TestRollbackKeepsCRDThatWouldDropData: revision 2 adds a field to the
// CRD's only version and a custom resource sets it; rolling back to
// revision 1, whose schema lacks the field, would prune it from the stored
// object (a crdsafety finding), so the newer CRD is kept and the field
// stays.
func TestRollbackKeepsCRDThatWouldDropData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := envtest.UniqueName("rbdrop")
	plural, kind, crd := gizmo(t)
	crdName := plural + ".example.com"
	bd := crBD(t, ns, map[string]string{
		"crd.yaml": crd(gizmoVersion("v1", true, true)),
		"a.yaml":   readyCM("app", "true", "v1"),
	}, 8)
	bd = waitCondition(t, bd.Name, v1alpha2.TypeHealthy, metav1.ConditionTrue, v1alpha2.ReasonHealthy)
	good := bd.Status.ActiveBundle

	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) {
		b.Spec.Sources = source(manifests(t, map[string]string{
			"crd.yaml": crd(gizmoVersionWith("v1", true, true, "              size: {type: integer}\n")),
			"a.yaml":   readyCM("app", "false", "v2"),
		}))
	})
	// Written once the schema keeps size (until then it is pruned).
	envtest.Eventually(t, 20*time.Second, func() error {
		cr := &unstructured.Unstructured{}
		cr.SetAPIVersion("example.com/v1")
		cr.SetKind(kind)
		cr.SetNamespace(ns)
		cr.SetName("g1")
		_ = unstructured.SetNestedField(cr.Object, int64(3), "spec", "size")
		if err := env.Client.Create(ctx, cr); err != nil {
			return err
		}
		if _, ok, _ := unstructured.NestedInt64(cr.Object, "spec", "size"); !ok {
			_ = env.Client.Delete(ctx, cr)
			return fmt.Errorf("spec.size pruned: the new schema is not in effect yet")
		}
		return nil
	})

	bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonRolledBack)
	if bd.Status.ActiveBundle != good {
		t.Fatalf("active %s, want %s (rolled back)", bd.Status.ActiveBundle, good)
	}
	if msg := installedMessage(bd); !strings.Contains(msg, "kept the newer definition of CRD "+crdName) || !strings.Contains(msg, "Pruned:v1:.spec.size") {
		t.Fatalf("Installed message %q should name the kept CRD and the finding", msg)
	}
	waitValue(t, ns, "app", "v1")
	cr := &unstructured.Unstructured{}
	cr.SetAPIVersion("example.com/v1")
	cr.SetKind(kind)
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "g1"}, cr); err != nil {
		t.Fatal(err)
	}
	if size, ok, _ := unstructured.NestedInt64(cr.Object, "spec", "size"); !ok || size != 3 {
		t.Fatalf("spec.size = %d (%t) after the rollback, want 3 kept", size, ok)
	}
	waitEvent(t, bd.Name, v1alpha2.ReasonCRDKept, crdName)
}
