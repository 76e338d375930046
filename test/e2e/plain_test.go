package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/sourcetree"
	"github.com/rukpak/rukpak/pkg/envtest"
)

func TestLocalUpIsIdempotent(t *testing.T) {
	out, err := rukpakctl("local", "up")
	if err != nil {
		t.Fatalf("second local up: %v\n%s", err, out)
	}
	if !strings.Contains(out, "already up") || lastLine(out) != "export KUBECONFIG="+suite.kubeconfig {
		t.Fatalf("second local up should say it is already up and print the KUBECONFIG line:\n%s", out)
	}
	out, err = rukpakctl("local", "env")
	if err != nil || lastLine(out) != "export KUBECONFIG="+suite.kubeconfig {
		t.Fatalf("local env: %v\n%s", err, out)
	}
}

// TestExampleDeploymentBecomesAvailable installs examples/hello.yaml the
// way the README does and waits with kubectl.
func TestExampleDeploymentBecomesAvailable(t *testing.T) {
	kubectl(t, "apply", "-f", filepath.Join(sourcetree.Root(), "examples", "hello.yaml"))
	kubectl(t, "wait", "--for=condition=Installed", "bd/hello", "--timeout=60s")
	kubectl(t, "wait", "--for=condition=Available", "deployment/hello", "-n", "hello", "--timeout=120s")
	out := kubectl(t, "get", "bd", "hello")
	if !strings.Contains(out, "core-rukpak-io-plain") || !strings.Contains(out, "hello-") {
		t.Fatalf("printer columns do not show class and active bundle:\n%s", out)
	}
	// The Deployment's rollout (status, the controller's annotations) is
	// not drift: rukpak must not report restoring anything. A real drift
	// afterwards (replicas changed) is restored and reported: exactly one
	// DriftCorrected then, counting an event's series.
	kubectl(t, "scale", "deployment/hello", "-n", "hello", "--replicas=3")
	var corrected int
	envtest.Eventually(t, 30*time.Second, func() error {
		d := &appsv1.Deployment{}
		if err := suite.client.Get(context.Background(), client.ObjectKey{Namespace: "hello", Name: "hello"}, d); err != nil {
			return err
		}
		if r := ptr.Deref(d.Spec.Replicas, 1); r != 2 {
			return fmt.Errorf("deployment/hello has %d replicas, want 2 restored", r)
		}
		list := &eventsv1.EventList{}
		if err := suite.client.List(context.Background(), list, client.MatchingFields{"regarding.name": "hello"}); err != nil {
			return err
		}
		corrected = 0
		for _, e := range list.Items {
			if e.Reason == "DriftCorrected" {
				corrected++
				if e.Series != nil {
					corrected += int(e.Series.Count) - 1
				}
			}
		}
		if corrected == 0 {
			return fmt.Errorf("no DriftCorrected event among %d events of bd/hello", len(list.Items))
		}
		return nil
	})
	if corrected != 1 {
		t.Fatalf("%d DriftCorrected events for one drift: the rollout of an untouched Deployment was reported as drift", corrected)
	}
}

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: %d
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      nodeSelector: {type: kwok}
      tolerations:
      - {key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}
      containers:
      - name: web
        image: registry.k8s.io/pause:3.10
`

func configMapYAML(name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  value: %q\n", name, value)
}

// source creates an immutable ConfigMap of manifests in rukpak-system.
func source(t *testing.T, files map[string]string) []v1alpha2.BundleSource {
	t.Helper()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("e2e"), Namespace: v1alpha2.SystemNamespace},
		Immutable:  ptr.To(true),
		Data:       files,
	}
	if err := suite.client.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	return []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeConfigMaps,
		ConfigMaps: []v1alpha2.ConfigMapSource{{ConfigMap: v1alpha2.LocalObjectReference{Name: cm.Name}, Path: "manifests"}}}}
}

func waitInstalled(t *testing.T, name string) *v1alpha2.BundleDeployment {
	t.Helper()
	bd := &v1alpha2.BundleDeployment{}
	envtest.Eventually(t, 60*time.Second, func() error {
		if err := suite.client.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
			return err
		}
		c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled)
		if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != bd.Generation {
			return fmt.Errorf("Installed = %+v", c)
		}
		return nil
	})
	return bd
}

// waitStatus polls BundleDeployment name until ok accepts it, and
// returns it. The manager writes status after it applies objects, so a
// test that saw an object change waits here for the status to say so.
func waitStatus(t *testing.T, name string, deadline time.Duration, ok func(*v1alpha2.BundleDeployment) error) *v1alpha2.BundleDeployment {
	t.Helper()
	bd := &v1alpha2.BundleDeployment{}
	envtest.Eventually(t, deadline, func() error {
		if err := suite.client.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
			return err
		}
		return ok(bd)
	})
	return bd
}

func waitAvailable(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	envtest.Eventually(t, 120*time.Second, func() error {
		d := &appsv1.Deployment{}
		if err := suite.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
			return err
		}
		if d.Status.ObservedGeneration != d.Generation || d.Status.AvailableReplicas != replicas {
			return fmt.Errorf("deployment %s: %d/%d available", name, d.Status.AvailableReplicas, replicas)
		}
		return nil
	})
}

// TestInstallUpgradeTamperDelete walks one BundleDeployment through its
// life on a cluster with controllers and a simulated node.
func TestInstallUpgradeTamperDelete(t *testing.T) {
	ctx := context.Background()
	name, ns := envtest.UniqueName("life"), envtest.UniqueName("life")
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     ns,
			Sources:              source(t, map[string]string{"01_config.yaml": configMapYAML("settings", "v1"), "02_web.yaml": fmt.Sprintf(deployment, 1)}),
		},
	}
	if err := suite.client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	rev1 := waitInstalled(t, name).Status.ActiveBundle
	waitAvailable(t, ns, "web", 1)

	// Upgrade: the ConfigMap is dropped (pruned), the Deployment scales.
	envtest.Eventually(t, 10*time.Second, func() error {
		if err := suite.client.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
			return err
		}
		bd.Spec.Sources = source(t, map[string]string{"02_web.yaml": fmt.Sprintf(deployment, 2)})
		return suite.client.Update(ctx, bd)
	})
	bd = waitInstalled(t, name)
	if bd.Status.ActiveBundle == rev1 {
		t.Fatalf("active bundle still %s after the upgrade", rev1)
	}
	waitAvailable(t, ns, "web", 2)
	envtest.Eventually(t, 10*time.Second, func() error {
		err := suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "settings"}, &corev1.ConfigMap{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("ConfigMap settings not pruned: %v", err)
		}
		return nil
	})

	// Tamper: scale by hand; rukpak owns replicas and puts it back.
	d := &appsv1.Deployment{}
	if err := suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Replicas = ptr.To[int32](5)
	if err := suite.client.Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 2*time.Second, func() error {
		if err := suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, d); err != nil {
			return err
		}
		if *d.Spec.Replicas != 2 {
			return fmt.Errorf("replicas = %d", *d.Spec.Replicas)
		}
		return nil
	})
	// Tamper: delete it; it comes back.
	if err := suite.client.Delete(ctx, d); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 2*time.Second, func() error {
		fresh := &appsv1.Deployment{}
		if err := suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, fresh); err != nil {
			return err
		}
		if fresh.UID == d.UID || !fresh.DeletionTimestamp.IsZero() {
			return fmt.Errorf("deployment not re-created yet")
		}
		return nil
	})
	waitAvailable(t, ns, "web", 2)

	// Delete: everything the BundleDeployment made goes away.
	if err := suite.client.Delete(ctx, bd); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 60*time.Second, func() error {
		if err := suite.client.Get(ctx, client.ObjectKey{Name: name}, &v1alpha2.BundleDeployment{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("BundleDeployment still there: %v", err)
		}
		if err := suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("Deployment still there: %v", err)
		}
		bundles := &v1alpha2.BundleList{}
		if err := suite.client.List(ctx, bundles, client.MatchingLabels{v1alpha2.LabelBundleDeployment: name}); err != nil {
			return err
		}
		if len(bundles.Items) != 0 {
			return fmt.Errorf("%d Bundles left", len(bundles.Items))
		}
		return nil
	})
}

// TestBadUpgradeKeepsRunningRevision: an upgrade with an invalid object is
// refused before any write; the Deployment of the running revision stays
// untouched and Available.
func TestBadUpgradeKeepsRunningRevision(t *testing.T) {
	ctx := context.Background()
	name, ns := envtest.UniqueName("bad"), envtest.UniqueName("bad")
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     ns,
			Sources:              source(t, map[string]string{"web.yaml": fmt.Sprintf(deployment, 1)}),
		},
	}
	if err := suite.client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	rev1 := waitInstalled(t, name).Status.ActiveBundle
	waitAvailable(t, ns, "web", 1)
	envtest.Eventually(t, 10*time.Second, func() error {
		if err := suite.client.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
			return err
		}
		bd.Spec.Sources = source(t, map[string]string{
			"web.yaml": fmt.Sprintf(deployment, 3),
			"svc.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: broken\nspec:\n  ports:\n  - port: 99999\n",
		})
		return suite.client.Update(ctx, bd)
	})
	envtest.Eventually(t, 30*time.Second, func() error {
		if err := suite.client.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
			return err
		}
		c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled)
		if c == nil || c.Reason != v1alpha2.ReasonValidationFailed || c.ObservedGeneration != bd.Generation {
			return fmt.Errorf("Installed = %+v", c)
		}
		if !strings.Contains(c.Message, "broken") || !strings.Contains(c.Message, rev1+" remains installed") {
			return fmt.Errorf("message %q should name the object and the running revision", c.Message)
		}
		return nil
	})
	d := &appsv1.Deployment{}
	if err := suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, d); err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 1 {
		t.Fatalf("running Deployment changed by a refused revision: replicas %d", *d.Spec.Replicas)
	}
	if bd.Status.ActiveBundle != rev1 {
		t.Fatalf("activeBundle = %s, want %s", bd.Status.ActiveBundle, rev1)
	}
}
