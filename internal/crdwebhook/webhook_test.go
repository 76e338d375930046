//go:build integration

package crdwebhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// startWebhook runs a manager with only the webhook set up, trusting a user
// that is not the test's admin.
func startWebhook(t *testing.T) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := Setup(mgr, Options{BindAddress: addr, CertDir: t.TempDir(), TrustedUsers: []string{"system:serviceaccount:rukpak-system:rukpak"}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: ConfigurationName}}
		if err := env.Client.Delete(context.Background(), cfg); err != nil {
			t.Errorf("deleting webhook configuration: %v", err)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	envtest.Eventually(t, 30*time.Second, func() error {
		cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: ConfigurationName}, cfg); err != nil {
			return err
		}
		if url := cfg.Webhooks[0].ClientConfig.URL; url == nil || *url != "https://"+addr+Path {
			return fmt.Errorf("clientConfig.url = %v", url)
		}
		return nil
	})
}

// createCRD creates a CRD like testCRD in group, owned by owner, and waits
// until it is established.
func createCRD(t *testing.T, group, owner string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := testCRD(owner, "color")
	crd.TypeMeta = metav1.TypeMeta{}
	crd.Spec.Group = group
	crd.Name = "widgets." + group
	if err := env.Client.Create(context.Background(), crd); err != nil {
		t.Fatalf("creating CRD: %v", err)
	}
	envtest.Eventually(t, 30*time.Second, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(crd), crd); err != nil {
			return err
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		return errors.New("CRD not established")
	})
	return crd
}

// updateSchema replaces the spec properties of the CRD's only version;
// it returns the API server's answer.
func updateSchema(name string, props ...string) error {
	return updateSchemaWith(nil, name, props...)
}

// updateSchemaWith is updateSchema with update options.
func updateSchemaWith(opts []client.UpdateOption, name string, props ...string) error {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
		return err
	}
	crd.Spec.Versions[0].Schema = testCRD("", props...).Spec.Versions[0].Schema
	return env.Client.Update(context.Background(), crd, opts...)
}

func TestWebhook(t *testing.T) {
	ctx := context.Background()
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("bd")},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     "default",
			Sources: []v1alpha2.BundleSource{{
				Type:       v1alpha2.SourceTypeConfigMaps,
				ConfigMaps: []v1alpha2.ConfigMapSource{{ConfigMap: v1alpha2.LocalObjectReference{Name: "manifests"}, Path: "manifests"}},
			}},
		},
	}
	if err := env.Client.Create(ctx, bd); err != nil {
		t.Fatalf("creating BundleDeployment: %v", err)
	}
	managed := createCRD(t, envtest.UniqueName("managed")+".example.com", bd.Name)
	unmanaged := createCRD(t, envtest.UniqueName("free")+".example.com", "")
	ns := env.Namespace(t, "webhook")
	for _, crd := range []*apiextensionsv1.CustomResourceDefinition{managed, unmanaged} {
		cr := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": crd.Spec.Group + "/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "painted", "namespace": ns},
			"spec":     map[string]any{"color": "red"},
		}}
		envtest.Eventually(t, 30*time.Second, func() error { return env.Client.Create(ctx, cr) })
	}
	startWebhook(t)

	// The API server may take a moment to pick up the configuration: probe
	// with dry runs, which call the webhook but change nothing.
	envtest.Eventually(t, 30*time.Second, func() error {
		err := updateSchemaWith([]client.UpdateOption{client.DryRunAll}, managed.Name)
		if err == nil {
			return errors.New("unsafe dry-run update was allowed")
		}
		if !strings.Contains(err.Error(), "denied") {
			return err
		}
		return nil
	})
	err := updateSchema(managed.Name)
	if err == nil || !apierrors.IsForbidden(err) {
		t.Fatalf("unsafe update: got %v, want a denial", err)
	}
	t.Logf("denial: %v", err)
	for _, want := range []string{"[Pruned:v1:.spec.color] field removed", ns + "/painted", "managed by BundleDeployment " + bd.Name} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("denial %q lacks %q", err, want)
		}
	}
	if err := updateSchema(managed.Name, "color", "size"); err != nil {
		t.Errorf("adding an optional field: %v", err)
	}
	if err := updateSchema(unmanaged.Name); err != nil {
		t.Errorf("unsafe update of an unlabelled CRD: %v", err)
	}
	envtest.Eventually(t, 10*time.Second, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(bd), bd); err != nil {
			return err
		}
		bd.Spec.Upgrade = &v1alpha2.UpgradePolicy{CRDUpgradeSafety: v1alpha2.CRDUpgradeSafetyNone}
		return env.Client.Update(ctx, bd)
	})
	if err := updateSchema(managed.Name); err != nil {
		t.Errorf("unsafe update after opting out: %v", err)
	}
}
