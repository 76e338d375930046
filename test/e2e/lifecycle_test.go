package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// webDeployment is a Deployment whose Pods run on the simulated node, or
// on no node at all when node is not "kwok" (they stay Pending, so the
// rollout never completes).
func webDeployment(node, version string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  progressDeadlineSeconds: 600
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web, version: %q}
    spec:
      nodeSelector: {type: %q}
      tolerations:
      - {key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}
      containers:
      - name: web
        image: registry.k8s.io/pause:3.10
`, version, node)
}

// TestBadRolloutRollsBack upgrades a Deployment to a template whose Pods
// can never be scheduled: after the progress deadline rukpak re-applies
// the last healthy revision, the old template is running again, and the
// status says which revision failed and why.
func TestBadRolloutRollsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := envtest.UniqueName("rollout")
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     name,
			Sources:              source(t, map[string]string{"web.yaml": webDeployment("kwok", "v1")}),
			HealthChecks:         &v1alpha2.HealthChecks{ProgressDeadlineSeconds: ptr.To[int32](15)},
		},
	}
	if err := suite.client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, name, v1alpha2.TypeHealthy, metav1.ConditionTrue, v1alpha2.ReasonHealthy)
	waitAvailable(t, name, "web", 2)
	good := waitInstalled(t, name).Status.ActiveBundle

	updateSpec(t, name, func(s *v1alpha2.BundleDeploymentSpec) {
		s.Sources = source(t, map[string]string{"web.yaml": webDeployment("nowhere", "v2")})
	})
	// While it rolls out, Progressing says so.
	waitCondition(t, name, v1alpha2.TypeProgressing, metav1.ConditionTrue, v1alpha2.ReasonRollingOut)
	envtest.Eventually(t, 90*time.Second, func() error {
		got := &v1alpha2.BundleDeployment{}
		if err := suite.client.Get(ctx, client.ObjectKey{Name: name}, got); err != nil {
			return err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha2.TypeInstalled)
		if c == nil || c.Reason != v1alpha2.ReasonRolledBack {
			return fmt.Errorf("Installed = %+v", c)
		}
		if !strings.Contains(c.Message, "not healthy within") || !strings.Contains(c.Message, "Deployment") || got.Status.ActiveBundle != good {
			return fmt.Errorf("message %q, active %s (want %s)", c.Message, got.Status.ActiveBundle, good)
		}
		return nil
	})
	// The old template runs again.
	envtest.Eventually(t, 120*time.Second, func() error {
		d := &appsv1.Deployment{}
		if err := suite.client.Get(ctx, client.ObjectKey{Namespace: name, Name: "web"}, d); err != nil {
			return err
		}
		if v := d.Spec.Template.Labels["version"]; v != "v1" {
			return fmt.Errorf("template version %s, want v1", v)
		}
		if d.Status.ObservedGeneration != d.Generation || d.Status.UpdatedReplicas != 2 || d.Status.AvailableReplicas != 2 || d.Status.Replicas != 2 {
			return fmt.Errorf("rollout back to v1 not complete: %+v", d.Status)
		}
		return nil
	})
	waitCondition(t, name, v1alpha2.TypeHealthy, metav1.ConditionTrue, v1alpha2.ReasonHealthy)
	out, err := rukpakctl("history", name)
	if err != nil || !strings.Contains(out, "RolledBack") || !strings.Contains(out, "last-healthy") {
		t.Fatalf("rukpakctl history: %v\n%s", err, out)
	}
}

// TestPauseStopsDriftCorrection pauses a BundleDeployment, edits a managed
// Deployment by hand (kept), then unpauses (restored).
func TestPauseStopsDriftCorrection(t *testing.T) {
	ctx := context.Background()
	name := envtest.UniqueName("pause")
	createBD(t, name, source(t, map[string]string{"web.yaml": webDeployment("kwok", "v1")}))
	waitInstalled(t, name)
	updateSpec(t, name, func(s *v1alpha2.BundleDeploymentSpec) { s.Paused = true })
	waitCondition(t, name, v1alpha2.TypePaused, metav1.ConditionTrue, v1alpha2.ReasonPaused)
	kubectl(t, "scale", "deployment/web", "-n", name, "--replicas=1")
	time.Sleep(3 * time.Second) // drift is corrected within a second when not paused
	d := &appsv1.Deployment{}
	if err := suite.client.Get(ctx, client.ObjectKey{Namespace: name, Name: "web"}, d); err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 1 {
		t.Fatalf("replicas = %d while paused, want the hand-made 1", *d.Spec.Replicas)
	}
	updateSpec(t, name, func(s *v1alpha2.BundleDeploymentSpec) { s.Paused = false })
	waitAvailable(t, name, "web", 2)
}

const gadgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.e2e.rukpak.io
spec:
  group: e2e.rukpak.io
  names: {kind: Gadget, listKind: GadgetList, plural: gadgets, singular: gadget}
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
%s`

// TestCRDFieldRemovalIsRefused removes a CRD field an existing custom
// resource uses: refused, naming the resource; with crdUpgradeSafety None
// the same upgrade proceeds.
func TestCRDFieldRemovalIsRefused(t *testing.T) {
	ctx := context.Background()
	name := envtest.UniqueName("gadgets")
	createBD(t, name, source(t, map[string]string{"crd.yaml": fmt.Sprintf(gadgetCRD, "              size: {type: integer}\n              color: {type: string}\n")}))
	waitInstalled(t, name)
	kubectl(t, "create", "namespace", name+"-use")
	g := &unstructured.Unstructured{}
	g.SetAPIVersion("e2e.rukpak.io/v1")
	g.SetKind("Gadget")
	g.SetNamespace(name + "-use")
	g.SetName("g1")
	_ = unstructured.SetNestedField(g.Object, int64(3), "spec", "size")
	// The new kind may take a moment to reach the API server's discovery.
	envtest.Eventually(t, 30*time.Second, func() error { return suite.client.Create(ctx, g) })

	updateSpec(t, name, func(s *v1alpha2.BundleDeploymentSpec) {
		s.Sources = source(t, map[string]string{"crd.yaml": fmt.Sprintf(gadgetCRD, "              color: {type: string}\n")})
	})
	bd := waitCondition(t, name, v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonCRDUpgradeUnsafe)
	msg := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled).Message
	if !strings.Contains(msg, ".spec.size") || !strings.Contains(msg, name+"-use/g1") {
		t.Fatalf("message %q should name the removed field and the Gadget using it", msg)
	}
	updateSpec(t, name, func(s *v1alpha2.BundleDeploymentSpec) {
		s.Upgrade = &v1alpha2.UpgradePolicy{CRDUpgradeSafety: v1alpha2.CRDUpgradeSafetyNone}
	})
	waitInstalled(t, name)
	deleteBD(t, name)
}

// TestCollisionWithHandMadeObject: a ConfigMap made with kubectl is not
// taken by default; IfNoController adopts it.
func TestCollisionWithHandMadeObject(t *testing.T) {
	name := envtest.UniqueName("collide")
	kubectl(t, "create", "namespace", name)
	kubectl(t, "create", "configmap", "settings", "-n", name, "--from-literal=value=by-hand")
	createBD(t, name, source(t, map[string]string{"cm.yaml": configMapYAML("settings", "from-bundle")}))
	bd := waitCondition(t, name, v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonCollision)
	msg := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled).Message
	if !strings.Contains(msg, "settings") || !strings.Contains(msg, "kubectl") {
		t.Fatalf("message %q should name the object and its manager (kubectl)", msg)
	}
	if v := configMapValue(t, name, "settings"); v != "by-hand" {
		t.Fatalf("a refused revision changed the object: value %q", v)
	}
	updateSpec(t, name, func(s *v1alpha2.BundleDeploymentSpec) {
		s.CollisionProtection = v1alpha2.CollisionProtectionIfNoController
	})
	waitInstalled(t, name)
	if v := configMapValue(t, name, "settings"); v != "from-bundle" {
		t.Fatalf("value %q after adoption, want from-bundle", v)
	}
}
