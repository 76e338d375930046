//go:build integration

package livetest

import (
	"context"
	"fmt"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rukpak/rukpak/internal/review"
	"github.com/rukpak/rukpak/pkg/envtest"
)

var env *envtest.Env

func TestMain(m *testing.M) { envtest.Run(m, &env) }

// TestLiveCluster reviews a revision whose active revision is unknown
// against a real API server: objects the server defaulted compare equal
// on the fields the revision sets, a kind whose CRD the revision ships is
// found in that CRD, and a ClusterRole the revision labels for a live
// aggregated ClusterRole grants what it holds to a live binding's user.
func TestLiveCluster(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "review")
	label := envtest.UniqueName("review.test/aggregate")[len("review.test/"):]
	aggName, partName := envtest.UniqueName("review-agg"), envtest.UniqueName("review-part")
	hookName, newRole := envtest.UniqueName("review-hook"), envtest.UniqueName("review-new")
	user := envtest.UniqueName("auditor")
	selector := map[string]string{"review.test/" + label: "true"}

	replicas := int32(1)
	create(t,
		&rbacv1.ClusterRole{
			ObjectMeta:      metav1.ObjectMeta{Name: aggName},
			AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: selector}}},
		},
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: partName, Labels: selector},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}},
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "auditor", Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: aggName},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		},
		&appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "op", Namespace: ns},
			Spec: appsv1.DeploymentSpec{
				Replicas: &replicas,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "op"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "op"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "op:1"}}},
				},
			},
		},
		&admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: hookName},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{
				Name:                    "w.review.test",
				ClientConfig:            admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: ns, Name: "op", Path: ptr.To("/validate")}},
				Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"CREATE"}, Rule: admissionregistrationv1.Rule{APIGroups: []string{"review.test"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}}}},
				SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
				AdmissionReviewVersions: []string{"v1"},
			}},
		},
	)

	next := decode(t,
		`{apiVersion: apps/v1, kind: Deployment, metadata: {name: op}, spec: {replicas: 1, selector: {matchLabels: {app: op}},
  template: {metadata: {labels: {app: op}}, spec: {containers: [{name: manager, image: "op:1"}]}}}}`,
		fmt.Sprintf(`{apiVersion: admissionregistration.k8s.io/v1, kind: ValidatingWebhookConfiguration, metadata: {name: %s}, webhooks: [{name: w.review.test,
  clientConfig: {service: {namespace: %s, name: op, path: /validate}}, sideEffects: None, admissionReviewVersions: [v1],
  rules: [{operations: [CREATE], apiGroups: [review.test], apiVersions: [v1], resources: [widgets]}]}]}`, hookName, ns),
		fmt.Sprintf(`{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: %s, labels: {"review.test/%s": "true"}},
  rules: [{apiGroups: [""], resources: [secrets], verbs: [get]}]}`, newRole, label),
		`{apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, metadata: {name: gizmos.review.test},
  spec: {group: review.test, names: {kind: Gizmo, plural: gizmos}, scope: Namespaced, versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]}}`,
		`{apiVersion: review.test/v1, kind: Gizmo, metadata: {name: g}}`,
	)
	r, err := review.Compute(ctx, review.Input{New: next, InstallNamespace: ns, Mapper: env.Client.RESTMapper(), Live: review.FromReader(env.Client)})
	if err != nil {
		t.Fatalf("Compute() error = %v", err)
	}
	out, _ := yaml.Marshal(r)
	if r.Objects.UnchangedCount != 2 || r.Objects.ChangedCount != 0 || r.Objects.AddedCount != 3 {
		t.Errorf("objects: %d unchanged, %d changed, %d added; want the Deployment and webhook unchanged, 3 added:\n%s", r.Objects.UnchangedCount, r.Objects.ChangedCount, r.Objects.AddedCount, out)
	}
	if r.APISurface.WebhookCount != 0 {
		t.Errorf("webhooks changed, want none (the API server's defaults are no change):\n%s", out)
	}
	if len(r.RBAC.Gained) != 1 || r.RBAC.Gained[0].Subject.Name != user || r.RBAC.Gained[0].Rule.Namespace != ns ||
		fmt.Sprint(r.RBAC.Gained[0].Rule.Resources) != "[secrets]" {
		t.Errorf("gained = %+v, want user %s get secrets in namespace %s:\n%s", r.RBAC.Gained, user, ns, out)
	}
	if !r.GrowsPower {
		t.Errorf("GrowsPower = false:\n%s", out)
	}
}

// create creates objs and deletes the cluster-scoped ones after the test.
func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := env.Client.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %s: %v", o.GetName(), err)
		}
		if o.GetNamespace() == "" {
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), o) })
		}
	}
}

// decode decodes YAML objects.
func decode(t *testing.T, docs ...string) []*unstructured.Unstructured {
	t.Helper()
	out := make([]*unstructured.Unstructured, len(docs))
	for i, d := range docs {
		out[i] = &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(d), &out[i].Object); err != nil {
			t.Fatalf("decoding %s: %v", d, err)
		}
	}
	return out
}
