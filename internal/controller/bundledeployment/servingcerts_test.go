//go:build integration

package bundledeployment_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/servingcert"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// webhookCSV is a registry+v1 CSV with a validating webhook that matches
// nothing (its objectSelector selects no object), so that it cannot get in
// the way of other tests.
const webhookCSV = `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: certs-op.v1.0.0
spec:
  installModes: [{type: AllNamespaces, supported: true}]
  install:
    strategy: deployment
    spec:
      deployments:
      - name: op
        spec:
          selector: {matchLabels: {app: op}}
          template:
            metadata: {labels: {app: op}}
            spec:
              containers: [{name: op, image: registry.k8s.io/pause:3.10}]
  webhookdefinitions:
  - type: ValidatingAdmissionWebhook
    generateName: vnothing.%s.example.com
    deploymentName: op
    admissionReviewVersions: [v1]
    sideEffects: None
    failurePolicy: Ignore
    objectSelector: {matchLabels: {never: matches}}
    rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
`

// TestServingCertificates: the manager fills in the certificate Secret of
// a registry+v1 webhook and injects its CA into the webhook
// configuration; drift correction keeps the certificate; a deleted Secret
// is made again, with a new CA injected.
func TestServingCertificates(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "certs")
	cm := manifests(t, map[string]string{"csv.yaml": fmt.Sprintf(webhookCSV, ns)})
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("bd")},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassRegistry,
			InstallNamespace:     ns,
			Sources:              source(cm),
		},
	}
	if err := env.Client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), bd) })
	waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)

	first := waitInjected(t, ns, nil)

	// Drift elsewhere is corrected without a new certificate.
	if err := env.Client.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "op-service"}}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 30*time.Second, func() error {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "op-service"}, &corev1.Service{})
	})
	if again := waitInjected(t, ns, nil); !bytes.Equal(again[servingcert.KeyCert], first[servingcert.KeyCert]) {
		t.Fatal("correcting drift of the Service changed the serving certificate")
	}

	// A deleted Secret is made again, and its new CA injected.
	if err := env.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "op-service-cert"}}); err != nil {
		t.Fatal(err)
	}
	waitInjected(t, ns, first[servingcert.KeyCA])
}

// waitInjected waits until the certificate Secret of op-service is filled
// in, with a CA other than notCA, and the webhook configuration trusts
// it; it returns the Secret's data.
func waitInjected(t *testing.T, ns string, notCA []byte) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	var data map[string][]byte
	envtest.Eventually(t, 30*time.Second, func() error {
		s := &corev1.Secret{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "op-service-cert"}, s); err != nil {
			return err
		}
		ca := s.Data[servingcert.KeyCA]
		if len(s.Data[servingcert.KeyCert]) == 0 || len(ca) == 0 {
			return fmt.Errorf("Secret not filled in: keys %v", len(s.Data))
		}
		if notCA != nil && bytes.Equal(ca, notCA) {
			return fmt.Errorf("Secret still has the old CA")
		}
		vwc := &unstructured.Unstructured{}
		vwc.SetAPIVersion("admissionregistration.k8s.io/v1")
		vwc.SetKind("ValidatingWebhookConfiguration")
		if err := env.Client.Get(ctx, client.ObjectKey{Name: ns + "-vnothing." + ns + ".example.com"}, vwc); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("no webhook configuration yet")
			}
			return err
		}
		hooks, _, _ := unstructured.NestedSlice(vwc.Object, "webhooks")
		if len(hooks) != 1 {
			return fmt.Errorf("%d webhooks", len(hooks))
		}
		enc, _, _ := unstructured.NestedString(hooks[0].(map[string]any), "clientConfig", "caBundle")
		if enc != base64.StdEncoding.EncodeToString(ca) {
			return fmt.Errorf("caBundle is not the Secret's CA")
		}
		data = s.Data
		return nil
	})
	return data
}
