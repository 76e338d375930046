package e2e

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// greedyOperator is a registry+v1 bundle whose CSV asks, in
// clusterPermissions, to read every Secret of the cluster.
var greedyOperator = map[string]string{
	"metadata/annotations.yaml": `annotations:
  operators.operatorframework.io.bundle.mediatype.v1: registry+v1
  operators.operatorframework.io.bundle.manifests.v1: manifests/
  operators.operatorframework.io.bundle.metadata.v1: metadata/
  operators.operatorframework.io.bundle.package.v1: greedy-operator
`,
	"manifests/greedy.clusterserviceversion.yaml": `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: greedy-operator.v0.1.0
spec:
  version: 0.1.0
  installModes:
  - {type: OwnNamespace, supported: true}
  - {type: AllNamespaces, supported: true}
  install:
    strategy: deployment
    spec:
      clusterPermissions:
      - serviceAccountName: greedy
        rules:
        - apiGroups: [""]
          resources: [secrets]
          verbs: [get, list, watch]
      deployments:
      - name: greedy
        spec:
          selector:
            matchLabels: {app: greedy}
          template:
            metadata:
              labels: {app: greedy}
            spec:
              serviceAccountName: greedy
              containers:
              - {name: manager, image: registry.example/greedy:v0.1.0}
`,
}

// askForMore is an operator bundle whose clusterPermissions ask for more
// than the team's install identity holds. The team's installer may manage
// RBAC objects (an admin granted it that, to install operators) but not
// grant what it does not hold itself: the API server's escalation check
// refuses the ClusterRole, the preflight reports it before anything is
// written, and no Deployment, ServiceAccount or binding of the operator is
// left behind.
func askForMore(t *testing.T, team *hostileTeam) func(*testing.T) {
	rbacRules := []rbacv1.PolicyRule{
		{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles", "clusterrolebindings", "roles", "rolebindings"}, Verbs: installerVerbs},
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: installerVerbs},
	}
	name := team.ns + "-operators"
	createOwned(t,
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rbacRules},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: team.ns, Name: team.sa}}})
	bd := envtest.UniqueName("greedy")
	team.create(t, team.bd(bd, v1alpha2.ClassRegistry, treeSource(t, greedyOperator)))
	return func(t *testing.T) {
		conditionMessage(t, bd, v1alpha2.TypeInstalled, v1alpha2.ReasonMissingPermissions, "ClusterRole", "secrets")
		ctx := context.Background()
		for _, obj := range []client.Object{&appsv1.Deployment{}, &rbacv1.ClusterRoleBinding{}} {
			list := &metav1.PartialObjectMetadataList{}
			gvk, err := suite.client.GroupVersionKindFor(obj)
			if err != nil {
				t.Fatal(err)
			}
			list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			if err := suite.client.List(ctx, list, client.MatchingLabels{v1alpha2.LabelOwnerName: bd}); err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
			if len(list.Items) > 0 {
				t.Fatalf("%s %s of the refused operator was written", gvk.Kind, list.Items[0].Name)
			}
		}
	}
}

var _ = registerHostile(hostileCase{name: "registry+v1 clusterPermissions ask for more than the install identity holds", attack: askForMore})
