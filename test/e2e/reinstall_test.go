package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// aggregatedBundle is a plain bundle like kyverno's: a CRD, aggregating
// ClusterRoles and many ClusterRoles that aggregate into each of them,
// one of them bound to a ServiceAccount. Every deletion of a ClusterRole
// makes the aggregation controller sync every aggregating one, so
// deleting many at once keeps it syncing while the aggregating ones go.
func aggregatedBundle(prefix string, aggregating, members int) map[string]string {
	files := map[string]string{
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
`, prefix, prefix[len(prefix)-6:]),
		"sa.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: " + prefix + "\n",
		"binding.yaml": fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: %[1]s
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: %[1]s-0}
subjects:
- {kind: ServiceAccount, name: %[1]s, namespace: %[1]s}
`, prefix),
	}
	for a := 0; a < aggregating; a++ {
		label := fmt.Sprintf("example.com/aggregate-to-%s-%d", prefix, a)
		files[fmt.Sprintf("aggregate-%d.yaml", a)] = fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: %s-%d
aggregationRule:
  clusterRoleSelectors:
  - matchLabels: {%s: "true"}
`, prefix, a, label)
		for m := 0; m < members; m++ {
			files[fmt.Sprintf("member-%d-%d.yaml", a, m)] = fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: %s-%d-%d
  labels: {%s: "true"}
rules:
- apiGroups: [example.com]
  resources: [r%d]
  verbs: [get, list, watch]
`, prefix, a, m, label, m)
		}
	}
	return files
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
	const aggregating, members, rounds = 3, 8, 5
	files := aggregatedBundle(prefix, aggregating, members)
	crdName := prefix + "s.example.com"
	t.Cleanup(func() {
		_ = suite.client.Delete(context.Background(), &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: crdName}})
	})
	var crdUID string
	for round := 1; round <= rounds; round++ {
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
			for a := 0; a < aggregating; a++ {
				cr := &rbacv1.ClusterRole{}
				if err := suite.client.Get(ctx, client.ObjectKey{Name: fmt.Sprintf("%s-%d", prefix, a)}, cr); err != nil {
					return err
				}
				if len(cr.Rules) != members {
					return fmt.Errorf("round %d: ClusterRole %s has %d aggregated rules, want %d", round, cr.Name, len(cr.Rules), members)
				}
			}
			return nil
		})
		deleteBD(t, prefix)
		list := &rbacv1.ClusterRoleList{}
		if err := suite.client.List(ctx, list); err != nil {
			t.Fatal(err)
		}
		for _, cr := range list.Items {
			if strings.HasPrefix(cr.Name, prefix+"-") {
				t.Fatalf("round %d: ClusterRole %s outlived the delete: labels %v, managed by %v", round, cr.Name, cr.Labels, cr.ManagedFields)
			}
		}
	}
}
