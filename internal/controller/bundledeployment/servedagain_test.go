//go:build integration

package bundledeployment_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// providerCRD is a CRD of a group of its own (%[1]s), as a monitoring
// stack ships the group its ServiceMonitors are of.
const providerCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: monitors.%[1]s
spec:
  group: %[1]s
  names: {kind: Monitor, listKind: MonitorList, plural: monitors, singular: monitor}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// TestKindServedAgainIsWaitedFor: a bundle whose custom resources are of a
// CRD another BundleDeployment ships is installed after it; both are
// deleted (the CRD with them, deletionPolicy.crds: Delete) and installed
// again, the dependent one first. The manager has mapped the kind before,
// yet the dependent one waits for it (UnknownKind, not a failed revision)
// and is installed within seconds of the CRD being served again.
func TestKindServedAgainIsWaitedFor(t *testing.T) {
	ctx := context.Background()
	group := envtest.UniqueName("mon") + ".example.com"
	ns := envtest.UniqueName("served")
	provider, dependent := envtest.UniqueName("provider"), envtest.UniqueName("dependent")
	providerFiles := map[string]string{"crd.yaml": fmt.Sprintf(providerCRD, group)}
	dependentFiles := map[string]string{
		"monitor.yaml": fmt.Sprintf("apiVersion: %s/v1\nkind: Monitor\nmetadata:\n  name: web\nspec: {port: web}\n", group),
		"cm.yaml":      cmYAML("beside", "1"),
	}
	crdName := "monitors." + group
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: crdName}})
	})
	install := func(name string, files map[string]string) {
		t.Helper()
		bd := &v1alpha2.BundleDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       v1alpha2.BundleDeploymentSpec{ProvisionerClassName: v1alpha2.ClassPlain, InstallNamespace: ns, Sources: source(manifests(t, files))},
		}
		if name == provider {
			bd.Spec.DeletionPolicy = &v1alpha2.DeletionPolicy{CRDs: v1alpha2.CRDDeletionPolicyDelete}
		}
		if err := env.Client.Create(ctx, bd); err != nil {
			t.Fatalf("creating BundleDeployment %s: %v", name, err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), bd) })
	}

	install(provider, providerFiles)
	waitCondition(t, provider, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	install(dependent, dependentFiles)
	waitCondition(t, dependent, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)

	deleteAndWait(t, dependent)
	deleteAndWait(t, provider)
	envtest.Eventually(t, 30*time.Second, func() error {
		err := env.Client.Get(ctx, client.ObjectKey{Name: crdName}, &apiextensionsv1.CustomResourceDefinition{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("CRD %s still there: %v", crdName, err)
		}
		return nil
	})

	install(dependent, dependentFiles)
	bd := waitCondition(t, dependent, v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonUnknownKind)
	if c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled); !strings.Contains(c.Message, "Monitor") {
		t.Fatalf("Installed message %q does not name the kind", c.Message)
	}
	if bd.Status.FailedBundle != "" {
		t.Fatalf("a kind not served recorded revision %s as failed", bd.Status.FailedBundle)
	}

	install(provider, providerFiles)
	waitCondition(t, provider, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	served := time.Now()
	// Installed when the CRD's change wakes it, not at its next retry.
	envtest.Eventually(t, 10*time.Second, func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: dependent}, bd); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != bd.Generation {
			return fmt.Errorf("Installed = %+v", c)
		}
		return nil
	})
	t.Logf("installed %s after the CRD was served again", time.Since(served).Round(time.Millisecond))
	if bd.Status.FailedBundle != "" {
		t.Fatalf("failedBundle = %q after the install", bd.Status.FailedBundle)
	}
}
