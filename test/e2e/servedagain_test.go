package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/localcluster"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// servedAgainDeadline is how soon a BundleDeployment waiting for a kind
// is installed once the kind is served again: the change of the CRD wakes
// it, where its retries would by then be 8 s or more apart.
const servedAgainDeadline = 10 * time.Second

// TestKindServedAgain: an operator bundle ships a custom resource (a
// ServiceMonitor, say) of a CRD a monitoring stack, another
// BundleDeployment, ships. Both are installed, deleted (the CRD with the
// stack: deletionPolicy.crds: Delete) and installed again, the operator
// first: it waits with UnknownKind, never a held failure, and is Ready
// within seconds of the stack's CRD being served again. Twice: with the
// manager having mapped the kind before, then with the manager restarted
// while the operator waits.
func TestKindServedAgain(t *testing.T) {
	ctx := context.Background()
	group := envtest.UniqueName("monitoring") + ".example.com"
	stack, operator := envtest.UniqueName("stack"), envtest.UniqueName("operator")
	ns := envtest.UniqueName("served")
	crdName := "servicemonitors." + group
	stackFiles := map[string]string{"crd.yaml": fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[1]s
spec:
  group: %[2]s
  names: {kind: ServiceMonitor, listKind: ServiceMonitorList, plural: servicemonitors, singular: servicemonitor}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, crdName, group)}
	operatorFiles := map[string]string{
		"monitor.yaml": fmt.Sprintf("apiVersion: %s/v1\nkind: ServiceMonitor\nmetadata:\n  name: operator-metrics\nspec:\n  endpoints: [{port: metrics}]\n", group),
		"config.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: operator-config\ndata: {level: info}\n",
	}
	t.Cleanup(func() {
		for _, name := range []string{operator, stack} {
			_ = suite.client.Delete(context.Background(), &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: name}})
		}
		_ = suite.client.Delete(context.Background(), &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: crdName}})
	})
	install := func(name string, files map[string]string) {
		t.Helper()
		bd := &v1alpha2.BundleDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       v1alpha2.BundleDeploymentSpec{ProvisionerClassName: v1alpha2.ClassPlain, InstallNamespace: ns, Sources: source(t, files)},
		}
		if name == stack {
			bd.Spec.DeletionPolicy = &v1alpha2.DeletionPolicy{CRDs: v1alpha2.CRDDeletionPolicyDelete}
		}
		if err := suite.client.Create(ctx, bd); err != nil {
			t.Fatalf("creating BundleDeployment %s: %v", name, err)
		}
	}
	uninstallBoth := func() {
		t.Helper()
		for _, name := range []string{operator, stack} {
			if err := suite.client.Delete(ctx, &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
				t.Fatal(err)
			}
		}
		envtest.Eventually(t, 60*time.Second, func() error {
			for _, name := range []string{operator, stack} {
				if err := suite.client.Get(ctx, client.ObjectKey{Name: name}, &v1alpha2.BundleDeployment{}); !apierrors.IsNotFound(err) {
					return fmt.Errorf("BundleDeployment %s still there: %v", name, err)
				}
			}
			if err := suite.client.Get(ctx, client.ObjectKey{Name: crdName}, &apiextensionsv1.CustomResourceDefinition{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("CRD %s still there: %v", crdName, err)
			}
			return nil
		})
	}

	install(stack, stackFiles)
	waitReady(t, stack)
	install(operator, operatorFiles)
	waitReady(t, operator)

	for _, restart := range []bool{false, true} {
		uninstallBoth()
		install(operator, operatorFiles)
		waitUnknownKind(t, operator)
		if restart {
			restartManager(t)
			// The status still says UnknownKind (a restarted manager
			// that finds the same writes nothing, so this cannot tell
			// the processes apart); what shows the new process waits for
			// the kind, never having mapped it, is that it is Ready
			// within servedAgainDeadline below of the CRD being served.
			waitUnknownKind(t, operator)
		}
		install(stack, stackFiles)
		waitReady(t, stack)
		served := time.Now()
		envtest.Eventually(t, servedAgainDeadline, func() error { return readyNow(operator) })
		t.Logf("restart %v: %s Ready %s after the CRD was served again", restart, operator, time.Since(served).Round(time.Millisecond))
	}
}

// readyNow says why BundleDeployment name is not Ready for its generation,
// nil when it is.
func readyNow(name string) error {
	bd := &v1alpha2.BundleDeployment{}
	if err := suite.client.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
		return err
	}
	if c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeReady); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != bd.Generation {
		return fmt.Errorf("%s: Ready = %+v", name, c)
	}
	return nil
}

// waitUnknownKind waits until BundleDeployment name waits for a kind to be
// served (Installed=False, UnknownKind) without a failed revision, and
// fails at once when it is held (a revision recorded as failed) instead.
func waitUnknownKind(t *testing.T, name string) {
	t.Helper()
	envtest.Eventually(t, 60*time.Second, func() error {
		bd := &v1alpha2.BundleDeployment{}
		if err := suite.client.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
			return err
		}
		c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled)
		if bd.Status.FailedBundle != "" {
			t.Fatalf("%s: revision %s held as failed (Installed %+v), want it waiting for its kind", name, bd.Status.FailedBundle, c)
		}
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha2.ReasonUnknownKind || c.ObservedGeneration != bd.Generation {
			return fmt.Errorf("%s: Installed = %+v", name, c)
		}
		if !strings.Contains(c.Message, "ServiceMonitor") {
			t.Fatalf("%s: Installed message %q does not name the kind", name, c.Message)
		}
		return nil
	})
}

// restartManager stops the local cluster's manager (SIGTERM: it gives up
// its lease) and starts it again as the suite started it.
func restartManager(t *testing.T) {
	t.Helper()
	cl, err := localcluster.Load(suite.stateDir)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := cl.PID("rukpak")
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatalf("stopping the manager: %v", err)
	}
	envtest.Eventually(t, 60*time.Second, func() error {
		if _, err := cl.PID("rukpak"); err == nil {
			return fmt.Errorf("the manager (pid %d) still runs", pid)
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := cl.StartManager(ctx, filepath.Join(suite.bin, "rukpak"), managerArgs()...); err != nil {
		t.Fatalf("starting the manager again: %v", err)
	}
}

// setAPIService points the APIService of group version gv at a Service
// that does not exist (the aggregated API goes away: Available=False), or
// back at the API server itself (local: Available), and waits until the
// aggregator says so. It takes the APIService over from the API server's
// registration of CRD groups (the automanaged label dropped).
func setAPIService(t *testing.T, gv string, available bool) {
	t.Helper()
	ctx := context.Background()
	get := func() (*unstructured.Unstructured, error) {
		svc := &unstructured.Unstructured{}
		svc.SetAPIVersion("apiregistration.k8s.io/v1")
		svc.SetKind("APIService")
		return svc, suite.client.Get(ctx, client.ObjectKey{Name: gv}, svc)
	}
	envtest.Eventually(t, 30*time.Second, func() error {
		svc, err := get()
		if err != nil {
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
		return suite.client.Update(ctx, svc)
	})
	want := string(metav1.ConditionFalse)
	if available {
		want = string(metav1.ConditionTrue)
	}
	envtest.Eventually(t, 60*time.Second, func() error {
		svc, err := get()
		if err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(svc.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Available" && m["status"] == want {
				return nil
			}
		}
		return fmt.Errorf("APIService %s: conditions %v, want Available %s", gv, conds, want)
	})
}

// TestKindOfAPIServiceServedAgain: an operator bundle ships a custom
// resource of a group an APIService serves. The bundle is installed,
// uninstalled, the APIService becomes unavailable (its Service gone) and
// the bundle is installed again: it waits with UnknownKind, never a held
// failure, and is Ready within seconds of the APIService being available
// again. Twice: with the manager having mapped the kind before, then with
// the manager restarted while the bundle waits.
func TestKindOfAPIServiceServedAgain(t *testing.T) {
	ctx := context.Background()
	group := envtest.UniqueName("aggregated") + ".example.com"
	gv := "v1." + group
	ns := envtest.UniqueName("apiservice")
	operator := envtest.UniqueName("operator")
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "servicemonitors." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "servicemonitors", Singular: "servicemonitor", Kind: "ServiceMonitor", ListKind: "ServiceMonitorList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
	if err := suite.client.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = suite.client.Delete(context.Background(), &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: operator}})
		_ = suite.client.Delete(context.Background(), crd)
		_ = suite.client.Delete(context.Background(), &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": map[string]any{"name": gv}}})
	})
	files := map[string]string{
		"monitor.yaml": fmt.Sprintf("apiVersion: %s/v1\nkind: ServiceMonitor\nmetadata:\n  name: operator-metrics\nspec:\n  endpoints: [{port: metrics}]\n", group),
		"config.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: operator-config\ndata: {level: info}\n",
	}
	install := func() {
		t.Helper()
		bd := &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: operator},
			Spec: v1alpha2.BundleDeploymentSpec{ProvisionerClassName: v1alpha2.ClassPlain, InstallNamespace: ns, Sources: source(t, files)}}
		envtest.Eventually(t, 30*time.Second, func() error { return suite.client.Create(ctx, bd) })
	}
	uninstall := func() {
		t.Helper()
		if err := suite.client.Delete(ctx, &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: operator}}); err != nil {
			t.Fatal(err)
		}
		envtest.Eventually(t, 60*time.Second, func() error {
			if err := suite.client.Get(ctx, client.ObjectKey{Name: operator}, &v1alpha2.BundleDeployment{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("BundleDeployment %s still there: %v", operator, err)
			}
			return nil
		})
	}

	install()
	waitReady(t, operator)
	for _, restart := range []bool{false, true} {
		uninstall()
		setAPIService(t, gv, false)
		install()
		waitUnknownKind(t, operator)
		if restart {
			restartManager(t)
			waitUnknownKind(t, operator)
		}
		setAPIService(t, gv, true)
		served := time.Now()
		envtest.Eventually(t, servedAgainDeadline, func() error { return readyNow(operator) })
		t.Logf("restart %v: %s Ready %s after the APIService was available again", restart, operator, time.Since(served).Round(time.Millisecond))
	}
}
