package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// scaledWeb is a Deployment of the simulated node with a version label
// the bundle sets.
func scaledWeb(name, version string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
  labels: {version: %[2]q}
spec:
  replicas: 1
  selector:
    matchLabels: {app: %[1]s}
  template:
    metadata:
      labels: {app: %[1]s}
    spec:
      nodeSelector: {type: kwok}
      tolerations:
      - {key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}
      containers:
      - name: web
        image: registry.k8s.io/pause:3.10
`, name, version)
}

// hpaFor autoscales Deployment target; without a metrics API on the
// local cluster it never scales by itself.
func hpaFor(target string) string {
	return fmt.Sprintf(`apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: %[1]s
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: %[1]s}
  minReplicas: 1
  maxReplicas: 10
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}
`, target)
}

// TestScalerAndRukpakDoNotFight: a scaler writes replicas through the
// scale subresource under its own field manager, for one Deployment named
// in spec.driftIgnore and one targeted by an autoscaler of the bundle. For
// a minute the replica counts it set stay, while an edit of another field
// rukpak sets is reverted within 2 s and an upgrade of the bundle changes
// what it changes without resetting replicas.
func TestScalerAndRukpakDoNotFight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name, ns := envtest.UniqueName("scaled"), envtest.UniqueName("scaled")
	files := func(version string) map[string]string {
		return map[string]string{"a.yaml": scaledWeb("web-a", version), "b.yaml": scaledWeb("web-b", version), "hpa.yaml": hpaFor("web-b")}
	}
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     ns,
			Sources:              source(t, files("1")),
			DriftIgnore:          []v1alpha2.DriftIgnoreRule{{Group: "apps", Kind: "Deployment", Name: "web-a", Paths: []string{"/spec/replicas"}}},
		},
	}
	if err := suite.client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = suite.client.Delete(context.Background(), bd) })
	waitInstalled(t, name)
	want := map[string]int32{"web-a": 3, "web-b": 4}
	for dep, n := range want {
		waitAvailable(t, ns, dep, 1)
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: dep}}
		scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: dep}, Spec: autoscalingv1.ScaleSpec{Replicas: n}}
		if err := suite.client.SubResource("scale").Update(ctx, d, client.WithSubResourceBody(scale), client.FieldOwner("e2e-scaler")); err != nil {
			t.Fatalf("scaling %s: %v", dep, err)
		}
	}

	replicas := func() (map[string]*appsv1.Deployment, error) {
		out := map[string]*appsv1.Deployment{}
		for dep, n := range want {
			d := &appsv1.Deployment{}
			if err := suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: dep}, d); err != nil {
				return nil, err
			}
			if *d.Spec.Replicas != n {
				return nil, fmt.Errorf("%s has %d replicas, the scaler set %d", dep, *d.Spec.Replicas, n)
			}
			out[dep] = d
		}
		return out, nil
	}
	start := time.Now()
	edited, upgraded := false, false
	for time.Since(start) < time.Minute {
		deps, err := replicas()
		if err != nil {
			t.Fatalf("after %s: %v", time.Since(start).Round(time.Millisecond), err)
		}
		switch {
		case !edited && time.Since(start) > 5*time.Second:
			// An edit of a field rukpak sets, on the Deployment the
			// scaler scales, is reverted.
			d := deps["web-a"]
			d.Labels["version"] = "tampered"
			if err := suite.client.Update(ctx, d); err != nil {
				t.Fatal(err)
			}
			edited = true
			envtest.Eventually(t, 2*time.Second, func() error {
				fresh := &appsv1.Deployment{}
				if err := suite.client.Get(ctx, client.ObjectKeyFromObject(d), fresh); err != nil {
					return err
				}
				if fresh.Labels["version"] != "1" {
					return fmt.Errorf("label version = %q", fresh.Labels["version"])
				}
				return nil
			})
		case edited && !upgraded && time.Since(start) > 15*time.Second:
			// An upgrade changes what it changes, not replicas.
			envtest.Eventually(t, 10*time.Second, func() error {
				cur := &v1alpha2.BundleDeployment{}
				if err := suite.client.Get(ctx, client.ObjectKey{Name: name}, cur); err != nil {
					return err
				}
				cur.Spec.Sources = source(t, files("2"))
				return suite.client.Update(ctx, cur)
			})
			upgraded = true
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !upgraded {
		t.Fatal("the upgrade was not made")
	}
	waitInstalled(t, name)
	deps, err := replicas()
	if err != nil {
		t.Fatal(err)
	}
	for dep, d := range deps {
		if d.Labels["version"] != "2" {
			t.Errorf("%s: label version = %q after the upgrade, want 2", dep, d.Labels["version"])
		}
	}
}
