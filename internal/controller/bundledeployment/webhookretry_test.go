//go:build integration

package bundledeployment_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// TestUnreachableWebhookIsRetried: an object refused because an admission
// webhook that must see it cannot be reached (an operator's own webhook
// whose pods are not up yet) is not a failed revision: the reconcile is
// retried, nothing is recorded as failed, and the revision installs once
// the webhook no longer refuses it, without a spec change.
func TestUnreachableWebhookIsRetried(t *testing.T) {
	ctx := context.Background()
	ns := envtest.UniqueName("whretry")
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("unreachable")},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "guard.rukpak-test.example.com",
			// Nothing listens on port 1: every call fails to connect.
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/validate")},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			TimeoutSeconds:          ptr.To[int32](2),
		}},
	}
	if err := env.Client.Create(ctx, vwc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, vwc) })

	bd := newBD(t, ns, manifests(t, map[string]string{"cm.yaml": cmYAML("guarded", "1")}))
	var got *v1alpha2.BundleDeployment
	envtest.Eventually(t, 30*time.Second, func() error {
		got = &v1alpha2.BundleDeployment{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: bd.Name}, got); err != nil {
			return err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == v1alpha2.TypeInstalled && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "guard.rukpak-test.example.com") {
				return nil
			}
		}
		return fmt.Errorf("Installed is not False naming the webhook: %+v", got.Status.Conditions)
	})
	if got.Status.FailedBundle != "" {
		t.Fatalf("a webhook that cannot be reached recorded revision %s as failed", got.Status.FailedBundle)
	}
	if _, err := configMapData(t, ns, "guarded"); err == nil {
		t.Fatal("the ConfigMap the webhook refused exists")
	}

	// The webhook is reachable (here: gone): the retry installs it.
	if err := env.Client.Delete(ctx, vwc); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	waitValue(t, ns, "guarded", "1")
}
