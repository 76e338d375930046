//go:build integration

package bundledeployment_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// setAPIService points the APIService of group version gv at a Service
// that does not exist (the aggregated API goes away: Available=False), or
// back at the API server itself (local: Available), and waits until the
// aggregator says so. It takes the APIService over from the API server's
// registration of CRD groups (the automanaged label dropped).
func setAPIService(t *testing.T, gv string, available bool) {
	t.Helper()
	ctx := context.Background()
	envtest.Eventually(t, 30*time.Second, func() error {
		svc := &unstructured.Unstructured{}
		svc.SetAPIVersion("apiregistration.k8s.io/v1")
		svc.SetKind("APIService")
		if err := env.Client.Get(ctx, client.ObjectKey{Name: gv}, svc); err != nil {
			return err
		}
		labels := svc.GetLabels()
		delete(labels, "kube-aggregator.kubernetes.io/automanaged")
		svc.SetLabels(labels)
		if available {
			unstructured.RemoveNestedField(svc.Object, "spec", "service")
			unstructured.RemoveNestedField(svc.Object, "spec", "insecureSkipTLSVerify")
		} else {
			_ = unstructured.SetNestedMap(svc.Object, map[string]any{"namespace": "default", "name": "nowhere", "port": int64(443)}, "spec", "service")
			_ = unstructured.SetNestedField(svc.Object, true, "spec", "insecureSkipTLSVerify")
		}
		return env.Client.Update(ctx, svc)
	})
	want := metav1.ConditionFalse
	if available {
		want = metav1.ConditionTrue
	}
	envtest.Eventually(t, 30*time.Second, func() error {
		svc := &unstructured.Unstructured{}
		svc.SetAPIVersion("apiregistration.k8s.io/v1")
		svc.SetKind("APIService")
		if err := env.Client.Get(ctx, client.ObjectKey{Name: gv}, svc); err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(svc.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Available" && m["status"] == string(want) {
				return nil
			}
		}
		return fmt.Errorf("APIService %s: conditions %v, want Available %s", gv, conds, want)
	})
}

// TestKindOfAPIServiceServedAgain: a kind served through an APIService
// that becomes unavailable (its Service gone) is waited for: a bundle of
// it installed again waits with UnknownKind (the change of the APIService
// made the manager's RESTMapper forget the kind, whose group's discovery
// then fails), and is installed within seconds of the APIService being
// available again, although the manager mapped the kind before.
func TestKindOfAPIServiceServedAgain(t *testing.T) {
	ctx := context.Background()
	group := envtest.UniqueName("agg") + ".example.com"
	gv := "v1." + group
	ns := envtest.UniqueName("aggregated")
	crd := fmt.Sprintf(providerCRD, group)
	u := &apiextensionsv1.CustomResourceDefinition{}
	if err := yamlInto(crd, u); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), u)
		_ = env.Client.Delete(context.Background(), &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": map[string]any{"name": gv}}})
	})
	files := map[string]string{"monitor.yaml": fmt.Sprintf("apiVersion: %s/v1\nkind: Monitor\nmetadata:\n  name: web\nspec: {port: web}\n", group)}
	name := envtest.UniqueName("dependent")
	create := func() {
		t.Helper()
		bd := &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha2.BundleDeploymentSpec{ProvisionerClassName: v1alpha2.ClassPlain, InstallNamespace: ns, Sources: source(manifests(t, files))}}
		if err := env.Client.Create(ctx, bd); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), bd) })
	}
	create()
	waitCondition(t, name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)

	// Uninstalled while the kind is served (its objects deleted), then
	// the API goes away and the bundle is installed again.
	deleteAndWait(t, name)
	setAPIService(t, gv, false)
	create()
	bd := waitCondition(t, name, v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonUnknownKind)
	if bd.Status.FailedBundle != "" {
		t.Fatalf("revision %s held as failed", bd.Status.FailedBundle)
	}
	t.Logf("waiting: %s", meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled).Message)

	setAPIService(t, gv, true)
	served := time.Now()
	envtest.Eventually(t, 10*time.Second, func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != bd.Generation {
			return fmt.Errorf("Installed = %+v", c)
		}
		return nil
	})
	t.Logf("installed %s after the APIService was available again", time.Since(served).Round(time.Millisecond))
}

// yamlInto decodes the YAML doc into obj.
func yamlInto(doc string, obj any) error {
	return yaml.Unmarshal([]byte(doc), obj)
}
