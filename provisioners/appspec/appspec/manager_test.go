package appspec_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
	"github.com/rukpak/rukpak/pkg/manager"
	"github.com/rukpak/rukpak/pkg/provisioner"

	"example.com/rukpak-appspec/appspec"
)

var env *envtest.Env

// TestMain starts a real API server (pkg/envtest) and runs the rukpak
// engine (pkg/manager) for the appspec provisioner in-process against it.
func TestMain(m *testing.M) {
	e, err := envtest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	env = e
	dir, err := os.MkdirTemp("", "appspec-store-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	opts := manager.DefaultOptions()
	opts.StorageDir = dir
	opts.HealthProbeBindAddress = "0"
	opts.MetricsBindAddress = "0"
	opts.DefaultIdentity = manager.IdentityManager
	opts.Provisioners = []provisioner.Provisioner{appspec.Provisioner()}
	opts.Classes = []v1alpha2.ProvisionerClass{appspec.Class()}
	mgr, err := manager.New(env.Config, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- mgr.Start(ctx) }()
	code := m.Run()
	cancel()
	<-done
	_ = env.Stop()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// bundle makes an immutable ConfigMap in rukpak-system holding app.yaml.
func bundle(t *testing.T, app string) []v1alpha2.BundleSource {
	t.Helper()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("app"), Namespace: v1alpha2.SystemNamespace},
		Immutable:  ptr.To(true),
		Data:       map[string]string{appspec.File: app},
	}
	if err := env.Client.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	return []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeConfigMaps, ConfigMaps: []v1alpha2.ConfigMapSource{{ConfigMap: v1alpha2.LocalObjectReference{Name: cm.Name}}}}}
}

// TestInstallDriftAndRefusal: an app installs as a Deployment and a
// Service; an edit of the Deployment is reverted; an upgrade with a bad
// app.yaml is refused naming the field, while the app stays; deleting the
// BundleDeployment removes the app.
func TestInstallDriftAndRefusal(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "appspec")
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("web")},
		Spec: v1alpha2.BundleDeploymentSpec{ProvisionerClassName: appspec.ClassName, InstallNamespace: ns,
			Sources: bundle(t, "name: web\nimage: nginx:1.27\nreplicas: 2\nport: 8080\n")},
	}
	if err := env.Client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	deploy := &appsv1.Deployment{}
	envtest.Eventually(t, 30*time.Second, func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, deploy); err != nil {
			return err
		}
		return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &corev1.Service{})
	})

	deploy.Spec.Replicas = ptr.To(int32(5))
	if err := env.Client.Update(ctx, deploy); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 10*time.Second, func() error {
		got := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(deploy), got); err != nil {
			return err
		}
		if *got.Spec.Replicas != 2 {
			return fmt.Errorf("replicas = %d, want 2 (reverted)", *got.Spec.Replicas)
		}
		return nil
	})

	envtest.Eventually(t, 10*time.Second, func() error {
		cur := &v1alpha2.BundleDeployment{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(bd), cur); err != nil {
			return err
		}
		cur.Spec.Sources = bundle(t, "name: web\nimage: nginx:1.27\nreplicas: 50\n")
		return env.Client.Update(ctx, cur)
	})
	envtest.Eventually(t, 30*time.Second, func() error {
		cur := &v1alpha2.BundleDeployment{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(bd), cur); err != nil {
			return err
		}
		c := meta.FindStatusCondition(cur.Status.Conditions, v1alpha2.TypeInstalled)
		if c == nil || c.Reason != v1alpha2.ReasonInvalidContent || c.ObservedGeneration != cur.Generation {
			return fmt.Errorf("Installed = %v, want InvalidContent for generation %d", c, cur.Generation)
		}
		if want := "app.yaml: replicas 50: must be between 0 and 10"; !strings.Contains(c.Message, want) {
			return fmt.Errorf("message %q does not say %q", c.Message, want)
		}
		return nil
	})
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(deploy), &appsv1.Deployment{}); err != nil {
		t.Fatalf("the installed app is gone after a refused upgrade: %v", err)
	}

	if err := env.Client.Delete(ctx, bd); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 30*time.Second, func() error {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(deploy), &appsv1.Deployment{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("the Deployment is still there (err %v)", err)
	})
}

// TestClassParameters: a second class of the same controller with
// spec.parameters reaches the format: its maxReplicas refuses an app the
// default class installs, and its labels land on the objects.
func TestClassParameters(t *testing.T) {
	ctx := context.Background()
	small := appspec.Class()
	small.Name = envtest.UniqueName("appspec-small")
	small.Spec.Parameters = &apiextensionsv1.JSON{Raw: []byte(`{"maxReplicas": 1, "labels": {"team": "small"}}`)}
	if err := env.Client.Create(ctx, &small); err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t, "appspec-params")
	create := func(app string) string {
		bd := &v1alpha2.BundleDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("small")},
			Spec:       v1alpha2.BundleDeploymentSpec{ProvisionerClassName: small.Name, InstallNamespace: ns, Sources: bundle(t, app)},
		}
		if err := env.Client.Create(ctx, bd); err != nil {
			t.Fatal(err)
		}
		return bd.Name
	}
	refused := create("name: big\nimage: nginx:1.27\nreplicas: 2\n")
	create("name: tiny\nimage: nginx:1.27\nreplicas: 1\n")
	envtest.Eventually(t, 30*time.Second, func() error {
		cur := &v1alpha2.BundleDeployment{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: refused}, cur); err != nil {
			return err
		}
		c := meta.FindStatusCondition(cur.Status.Conditions, v1alpha2.TypeInstalled)
		if c == nil || c.Reason != v1alpha2.ReasonInvalidContent || !strings.Contains(c.Message, "replicas 2: must be between 0 and 1") {
			return fmt.Errorf("Installed = %v, want InvalidContent naming the class's maxReplicas", c)
		}
		return nil
	})
	envtest.Eventually(t, 30*time.Second, func() error {
		d := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tiny"}, d); err != nil {
			return err
		}
		if d.Labels["team"] != "small" {
			return fmt.Errorf("labels %v lack the class's team=small", d.Labels)
		}
		return nil
	})
}
