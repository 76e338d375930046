package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// aggregatedBundle is a plain bundle like kyverno's: a CRD, an aggregating
// ClusterRole and two ClusterRoles that aggregate into it, bound to a
// ServiceAccount.
func aggregatedBundle(prefix string) map[string]string {
	label := "example.com/aggregate-to-" + prefix
	role := func(name, resource string) string {
		return fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: %s-%s
  labels: {%s: "true"}
rules:
- apiGroups: [""]
  resources: [%s]
  verbs: [get, list, watch]
`, prefix, name, label, resource)
	}
	return map[string]string{
		"crd.yaml": fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[1]ss.example.com
spec:
  group: example.com
  names: {kind: Agg%[2]s, listKind: Agg%[2]sList, plural: %[1]ss, singular: %[1]s}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, prefix, fmt.Sprint(len(prefix))+prefix[len(prefix)-6:]),
		"aggregate.yaml": fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: %s
aggregationRule:
  clusterRoleSelectors:
  - matchLabels: {%s: "true"}
`, prefix, label),
		"view.yaml": role("view", "configmaps"),
		"edit.yaml": role("edit", "services"),
		"sa.yaml":   "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: " + prefix + "\n",
		"binding.yaml": fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: %[1]s
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: %[1]s}
subjects:
- {kind: ServiceAccount, name: %[1]s, namespace: %[1]s}
`, prefix),
	}
}

// TestReinstallAfterAggregatedClusterRole deletes and installs again, five
// times, a bundle with a CRD and an aggregated ClusterRole, with the real
// clusterrole-aggregation controller of kube-controller-manager at work.
// The controller used to write the aggregating ClusterRole back (rules
// only, no labels) about once in three deletes, which blocked the next
// install as a collision; and the kept CRD, labelled for the deleted
// BundleDeployment, was refused as a stale owner's. Each delete must
// leave no ClusterRole of the bundle behind, and each install must take
// the kept CRD back.
func TestReinstallAfterAggregatedClusterRole(t *testing.T) {
	ctx := context.Background()
	prefix := envtest.UniqueName("aggr")
	files := aggregatedBundle(prefix)
	crdName := prefix + "s.example.com"
	var crdUID string
	for round := 1; round <= 5; round++ {
		bd := &v1alpha2.BundleDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: prefix},
			Spec: v1alpha2.BundleDeploymentSpec{ProvisionerClassName: v1alpha2.ClassPlain, InstallNamespace: prefix,
				Sources: source(t, files)},
		}
		if err := suite.client.Create(ctx, bd); err != nil {
			t.Fatal(err)
		}
		bd = waitInstalled(t, prefix)
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := suite.client.Get(ctx, client.ObjectKey{Name: crdName}, crd); err != nil {
			t.Fatal(err)
		}
		if crdUID == "" {
			crdUID = string(crd.UID)
		}
		if string(crd.UID) != crdUID || crd.Labels[v1alpha2.LabelOwnerUID] != string(bd.UID) {
			t.Fatalf("round %d: CRD uid %s labelled for %s; want the kept %s taken over by %s", round, crd.UID, crd.Labels[v1alpha2.LabelOwnerUID], crdUID, bd.UID)
		}
		// The aggregation controller has filled the rules in: it has
		// the ClusterRoles in its cache, as when the race happened.
		envtest.Eventually(t, 30*time.Second, func() error {
			cr := &rbacv1.ClusterRole{}
			if err := suite.client.Get(ctx, client.ObjectKey{Name: prefix}, cr); err != nil {
				return err
			}
			if len(cr.Rules) != 2 {
				return fmt.Errorf("round %d: aggregated rules %v, want the 2 of view and edit", round, cr.Rules)
			}
			return nil
		})
		deleteBD(t, prefix)
		for _, name := range []string{prefix, prefix + "-view", prefix + "-edit"} {
			cr := &rbacv1.ClusterRole{}
			if err := suite.client.Get(ctx, client.ObjectKey{Name: name}, cr); !apierrors.IsNotFound(err) {
				t.Fatalf("round %d: ClusterRole %s outlived the delete (%v): labels %v, managed by %v", round, name, err, cr.Labels, cr.ManagedFields)
			}
		}
	}
	t.Cleanup(func() {
		_ = suite.client.Delete(context.Background(), &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: crdName}})
	})
}
