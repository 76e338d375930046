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
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/testutil/envtest"
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
