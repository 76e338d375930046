//go:build integration

package bundledeployment_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/history"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// readyProbe makes a ConfigMap healthy only when its data.ready is "true".
var readyProbe = v1alpha2.Probe{
	Selector: v1alpha2.ProbeSelector{Kind: "ConfigMap"},
	CEL:      `self.data.ready == "true"`,
	Message:  "data.ready is not true",
}

func readyCM(name, ready, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  ready: %q\n  value: %q\n", name, ready, value)
}

func probedBD(t *testing.T, ns string, files map[string]string, onFailure v1alpha2.OnFailure) *v1alpha2.BundleDeployment {
	t.Helper()
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("bd")},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     ns,
			Sources:              source(manifests(t, files)),
			HealthChecks:         &v1alpha2.HealthChecks{ProgressDeadlineSeconds: ptr.To[int32](2), Probes: []v1alpha2.Probe{readyProbe}},
			Upgrade:              &v1alpha2.UpgradePolicy{OnFailure: onFailure},
		},
	}
	if err := env.Client.Create(context.Background(), bd); err != nil {
		t.Fatal(err)
	}
	return bd
}

func getBD(t *testing.T, name string) *v1alpha2.BundleDeployment {
	t.Helper()
	bd := &v1alpha2.BundleDeployment{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
		t.Fatal(err)
	}
	return bd
}

// TestUnhealthyUpgradeRollsBack upgrades to a revision that never becomes
// healthy: after the progress deadline the last healthy revision is
// re-applied (the object it pruned comes back), Installed says RolledBack
// naming the failed revision, and the failed revision is not retried until
// the retry annotation changes.
func TestUnhealthyUpgradeRollsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := envtest.UniqueName("rollback")
	bd := probedBD(t, ns, map[string]string{"a.yaml": readyCM("app", "true", "v1"), "b.yaml": readyCM("extra", "true", "v1")}, "")
	bd = waitCondition(t, bd.Name, v1alpha2.TypeHealthy, metav1.ConditionTrue, v1alpha2.ReasonHealthy)
	good := bd.Status.ActiveBundle
	if bd.Status.LastHealthyBundle != good {
		t.Fatalf("lastHealthyBundle = %q, want %s", bd.Status.LastHealthyBundle, good)
	}

	// v2 is never healthy and drops "extra".
	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) {
		b.Spec.Sources = source(manifests(t, map[string]string{"a.yaml": readyCM("app", "false", "v2")}))
	})
	bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonRolledBack)
	msg := installedMessage(bd)
	if !strings.Contains(msg, "not healthy within") || !strings.Contains(msg, "data.ready is not true") || !strings.Contains(msg, good) {
		t.Fatalf("message %q should say why and name the revision rolled back to", msg)
	}
	failed := bd.Status.FailedBundle
	if failed == "" || failed == good || bd.Status.ActiveBundle != good {
		t.Fatalf("active %s failed %s, want active %s and the new revision failed", bd.Status.ActiveBundle, failed, good)
	}
	waitValue(t, ns, "app", "v1")
	waitValue(t, ns, "extra", "v1")
	b := &v1alpha2.Bundle{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: failed}, b); err != nil {
		t.Fatal(err)
	}
	if b.Status.Outcome != v1alpha2.OutcomeRolledBack || b.Status.InstalledAt == nil {
		t.Fatalf("outcome of %s = %q (installed at %v), want RolledBack, and when it was installed", failed, b.Status.Outcome, b.Status.InstalledAt)
	}
	// The revision rolled back to reads as it did: healthy, installed.
	if err := env.Client.Get(ctx, client.ObjectKey{Name: good}, b); err != nil {
		t.Fatal(err)
	}
	if history.Outcome(bd, b) != v1alpha2.OutcomeHealthy || history.InstalledAt(bd, b) == nil {
		t.Fatalf("outcome of %s = %q (installed at %v), want Healthy, and when it was installed", good, history.Outcome(bd, b), history.InstalledAt(bd, b))
	}
	waitCondition(t, bd.Name, v1alpha2.TypeHealthy, metav1.ConditionTrue, v1alpha2.ReasonHealthy)

	// Not retried in a loop: the good revision stays for several deadlines.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if data, _ := configMapData(t, ns, "app"); data["value"] != "v1" {
			t.Fatalf("the failed revision was retried without a spec change: app = %v", data)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// The retry annotation tries it again (and it fails again).
	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) {
		if b.Annotations == nil {
			b.Annotations = map[string]string{}
		}
		b.Annotations[v1alpha2.AnnotationRetry] = "1"
	})
	waitValue(t, ns, "app", "v2")
	envtest.Eventually(t, 30*time.Second, func() error {
		got := getBD(t, bd.Name)
		if got.Status.ActiveBundle != good || got.Status.FailedRetry != "1" {
			return fmt.Errorf("active %s failedRetry %q", got.Status.ActiveBundle, got.Status.FailedRetry)
		}
		return nil
	})
	waitValue(t, ns, "app", "v1")
}

// TestUnhealthyUpgradeHolds leaves the failed revision in place with
// onFailure Hold and reports the exceeded deadline.
func TestUnhealthyUpgradeHolds(t *testing.T) {
	t.Parallel()
	ns := envtest.UniqueName("hold")
	bd := probedBD(t, ns, map[string]string{"a.yaml": readyCM("app", "true", "v1")}, v1alpha2.OnFailureHold)
	waitCondition(t, bd.Name, v1alpha2.TypeHealthy, metav1.ConditionTrue, v1alpha2.ReasonHealthy)
	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) {
		b.Spec.Sources = source(manifests(t, map[string]string{"a.yaml": readyCM("app", "false", "v2")}))
	})
	bd = waitCondition(t, bd.Name, v1alpha2.TypeProgressing, metav1.ConditionFalse, v1alpha2.ReasonProgressDeadlineExceeded)
	if bd.Status.FailedBundle != bd.Status.ActiveBundle {
		t.Fatalf("failed %s active %s: Hold keeps the failed revision active", bd.Status.FailedBundle, bd.Status.ActiveBundle)
	}
	if c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeHealthy); c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "app") {
		t.Fatalf("Healthy = %+v, want False naming the object", c)
	}
	waitValue(t, ns, "app", "v2")
}

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[1]s.example.com
spec:
  group: example.com
  names: {kind: %[2]s, listKind: %[2]sList, plural: %[1]s, singular: %[3]s}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
%[4]s`

// TestUnsafeCRDUpgradeIsRefused narrows an enum an existing custom
// resource's value is not in (and drops a field no object uses): refused,
// naming the field and the object; with crdUpgradeSafety None the same
// upgrade proceeds.
func TestUnsafeCRDUpgradeIsRefused(t *testing.T) {
	ctx := context.Background()
	ns := envtest.UniqueName("crd")
	plural := envtest.UniqueName("widgets")
	kind := "W" + strings.ReplaceAll(plural[len("widgets-"):], "-", "")
	v1 := fmt.Sprintf(widgetCRD, plural, kind, plural[:len(plural)-1], "              size: {type: integer}\n              color: {type: string}\n")
	bd := newBD(t, ns, manifests(t, map[string]string{"crd.yaml": v1}))
	waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)

	cr := &unstructured.Unstructured{}
	cr.SetAPIVersion("example.com/v1")
	cr.SetKind(kind)
	cr.SetNamespace(ns)
	cr.SetName("w1")
	_ = unstructured.SetNestedField(cr.Object, "blue", "spec", "color")
	envtest.Eventually(t, 20*time.Second, func() error { return env.Client.Create(ctx, cr) })

	// v2 turns color into an enum that w1's value is not in, and drops size.
	v2 := fmt.Sprintf(widgetCRD, plural, kind, plural[:len(plural)-1], "              color: {type: string, enum: [red, green]}\n")
	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) {
		b.Spec.Sources = source(manifests(t, map[string]string{"crd.yaml": v2}))
	})
	bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonCRDUpgradeUnsafe)
	msg := installedMessage(bd)
	for _, want := range []string{"[Invalid:v1:.spec.color]", ns + "/w1", "crdUpgradeSafety"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("message %q lacks %q", msg, want)
		}
	}

	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) {
		b.Spec.Upgrade = &v1alpha2.UpgradePolicy{CRDUpgradeSafety: v1alpha2.CRDUpgradeSafetyNone}
	})
	waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
}

// TestOptionalObjectWaitsForItsKind installs a bundle with an optional
// object whose kind is not served: Installed, the object listed as
// skipped; once its CRD exists, the object is applied.
func TestOptionalObjectWaitsForItsKind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := envtest.UniqueName("optional")
	plural := envtest.UniqueName("gizmos")
	kind := "G" + strings.ReplaceAll(plural[len("gizmos-"):], "-", "")
	gizmo := fmt.Sprintf("apiVersion: example.com/v1\nkind: %s\nmetadata:\n  name: g1\n  annotations:\n    core.rukpak.io/optional: \"true\"\nspec:\n  color: red\n", kind)
	bd := newBD(t, ns, manifests(t, map[string]string{"cm.yaml": cmYAML("plain", "1"), "gizmo.yaml": gizmo}))
	bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	if len(bd.Status.SkippedObjects) != 1 || bd.Status.SkippedObjects[0].Kind != kind {
		t.Fatalf("skippedObjects = %+v, want the %s", bd.Status.SkippedObjects, kind)
	}
	// Another bundle installs the CRD.
	crd := fmt.Sprintf(widgetCRD, plural, kind, plural[:len(plural)-1], "              color: {type: string}\n")
	other := newBD(t, envtest.UniqueName("optional"), manifests(t, map[string]string{"crd.yaml": crd}))
	waitCondition(t, other.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	envtest.Eventually(t, 60*time.Second, func() error {
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion("example.com/v1")
		obj.SetKind(kind)
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "g1"}, obj); err != nil {
			return err
		}
		if got := getBD(t, bd.Name); len(got.Status.SkippedObjects) != 0 {
			return fmt.Errorf("skippedObjects = %+v", got.Status.SkippedObjects)
		}
		return nil
	})
}

// TestAPIWarningsAreReported applies an object the API server warns about
// (a deprecated node label): the warning is in the Installed message.
func TestAPIWarningsAreReported(t *testing.T) {
	pod := `apiVersion: v1
kind: Pod
metadata:
  name: old-style
spec:
  nodeSelector:
    beta.kubernetes.io/os: linux
  containers:
  - name: c
    image: registry.k8s.io/pause:3.10
`
	bd := newBD(t, envtest.UniqueName("warn"), manifests(t, map[string]string{"pod.yaml": pod}))
	bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	if msg := installedMessage(bd); !strings.Contains(msg, "API server warnings") || !strings.Contains(msg, "beta.kubernetes.io/os") {
		t.Fatalf("message %q lacks the API server's warning", msg)
	}
}

// TestExpensiveProbeRefusedBeforeApply: a probe whose estimated cost is
// over the limit refuses the revision before any of its objects is
// applied, and a probe fixed by a spec change lets it install.
func TestExpensiveProbeRefusedBeforeApply(t *testing.T) {
	ns := envtest.UniqueName("probecost")
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("bd")},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     ns,
			Sources:              source(manifests(t, map[string]string{"cm.yaml": readyCM("big", "true", "aaaa")})),
			HealthChecks: &v1alpha2.HealthChecks{Probes: []v1alpha2.Probe{{
				Selector: v1alpha2.ProbeSelector{Kind: "ConfigMap"},
				CEL:      `self.data.value.replace('a', self.data.value) == ''`,
			}}},
		},
	}
	if err := env.Client.Create(context.Background(), bd); err != nil {
		t.Fatal(err)
	}
	got := waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonProbeTooExpensive)
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha2.TypeInstalled); !strings.Contains(c.Message, "spec.healthChecks") {
		t.Fatalf("message %q does not name spec.healthChecks", c.Message)
	}
	mustNotExist(t, &corev1.ConfigMap{}, ns, "big")

	updateBD(t, bd.Name, func(bd *v1alpha2.BundleDeployment) { bd.Spec.HealthChecks.Probes = []v1alpha2.Probe{readyProbe} })
	waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
}

// TestSettledRevisionThatTurnsUnhealthy: a revision that was healthy and
// then is not does not report "installed and healthy" next to
// Healthy=False, and is not rolled back.
func TestSettledRevisionThatTurnsUnhealthy(t *testing.T) {
	ctx := context.Background()
	ns := envtest.UniqueName("turns")
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("bd")},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     ns,
			Sources:              source(manifests(t, map[string]string{"a.yaml": readyCM("app", "true", "v1")})),
			HealthChecks: &v1alpha2.HealthChecks{Probes: []v1alpha2.Probe{{
				Selector: v1alpha2.ProbeSelector{Kind: "ConfigMap"},
				// A label rukpak does not own, so drift correction leaves it.
				CEL:     `!has(self.metadata.labels) || !('example.com/broken' in self.metadata.labels)`,
				Message: "marked broken",
			}}},
		},
	}
	if err := env.Client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	got := waitCondition(t, bd.Name, v1alpha2.TypeProgressing, metav1.ConditionFalse, v1alpha2.ReasonSettled)
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha2.TypeProgressing); !strings.Contains(c.Message, "installed and healthy") {
		t.Fatalf("Progressing message %q", c.Message)
	}

	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, cm); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(cm.DeepCopy())
	cm.Labels = map[string]string{"example.com/broken": "yes"}
	if err := env.Client.Patch(ctx, cm, patch, client.FieldOwner("someone-else")); err != nil {
		t.Fatal(err)
	}
	got = waitCondition(t, bd.Name, v1alpha2.TypeHealthy, metav1.ConditionFalse, v1alpha2.ReasonUnhealthy)
	envtest.Eventually(t, 20*time.Second, func() error {
		got = getBD(t, bd.Name)
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha2.TypeProgressing)
		if c == nil || c.Status != metav1.ConditionFalse || strings.Contains(c.Message, "installed and healthy") {
			return fmt.Errorf("Progressing = %+v next to Healthy=False", c)
		}
		return nil
	})
	if got.Status.ActiveBundle != got.Status.LastHealthyBundle {
		t.Fatalf("active %s, last healthy %s: a settled revision was changed", got.Status.ActiveBundle, got.Status.LastHealthyBundle)
	}
}

// TestSameCRDInTwoBundlesIsACollision: a second BundleDeployment shipping
// a CRD the first one installed, with a schema that would be an unsafe
// change of it, is refused as a Collision naming the first owner (the
// more precise reason), not as CRDUpgradeUnsafe.
func TestSameCRDInTwoBundlesIsACollision(t *testing.T) {
	plural := envtest.UniqueName("gadgets")
	kind := "G" + strings.ReplaceAll(plural[len("gadgets-"):], "-", "")
	first := fmt.Sprintf(widgetCRD, plural, kind, plural[:len(plural)-1], "              size: {type: integer}\n              color: {type: string}\n")
	owner := newBD(t, envtest.UniqueName("crd-a"), manifests(t, map[string]string{"crd.yaml": first}))
	waitCondition(t, owner.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)

	// The same CRD without size: an unsafe change of the installed one.
	second := fmt.Sprintf(widgetCRD, plural, kind, plural[:len(plural)-1], "              color: {type: string}\n")
	other := newBD(t, envtest.UniqueName("crd-b"), manifests(t, map[string]string{"crd.yaml": second}))
	got := waitCondition(t, other.Name, v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonCollision)
	if msg := installedMessage(got); !strings.Contains(msg, owner.Name) || !strings.Contains(msg, plural+".example.com") {
		t.Fatalf("message %q should name the CRD and its owner %s", msg, owner.Name)
	}
}
