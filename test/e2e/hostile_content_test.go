package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// Attacks with the content of a plain bundle, and with the
// BundleDeployment's own spec, that the install identity's RBAC, the
// admission policies and the plain format refuse.

// plainAttack is an attack that installs files as a plain bundle of the
// team's and expects the Installed condition to be False with reason and
// a message holding want.
func plainAttack(files func(team *hostileTeam) map[string]string, reason string, want func(team *hostileTeam) []string) func(*testing.T, *hostileTeam) func(*testing.T) {
	return func(t *testing.T, team *hostileTeam) func(*testing.T) {
		name := envtest.UniqueName("attack")
		team.create(t, team.bd(name, v1alpha2.ClassPlain, ownSource(t, files(team))))
		return func(t *testing.T) {
			conditionMessage(t, name, v1alpha2.TypeInstalled, reason, want(team)...)
		}
	}
}

// fixed returns its arguments, whatever the team.
func fixed[T any](v T) func(*hostileTeam) T { return func(*hostileTeam) T { return v } }

// yamlBomb is a "billion laughs" document: nine levels of aliases that
// would expand to 10^9 strings.
const yamlBomb = `apiVersion: v1
kind: ConfigMap
metadata:
  name: laughs
data:
  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]
  b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]
  c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]
  d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]
  e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]
  f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]
  g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]
  h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g,*g]
  i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h,*h]
`

var _ = registerHostile(
	hostileCase{
		name: "bundle binds its ServiceAccount to cluster-admin",
		attack: plainAttack(fixed(map[string]string{"crb.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: hostile-escalation
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects:
- {kind: ServiceAccount, name: installer, namespace: default}
`}), v1alpha2.ReasonMissingPermissions, func(team *hostileTeam) []string {
			return []string{"ServiceAccount " + team.ns + "/" + team.sa, "clusterrolebindings", "nothing was applied"}
		}),
	},
	hostileCase{
		name: "bundle writes into kube-system",
		attack: plainAttack(fixed(map[string]string{"cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: planted, namespace: kube-system}
data: {value: x}
`}), v1alpha2.ReasonMissingPermissions, fixed([]string{"Role in namespace kube-system", "configmaps"})),
	},
	hostileCase{
		name: "bundle overwrites the canary team's ConfigMap",
		attack: func(t *testing.T, team *hostileTeam) func(*testing.T) {
			// Any other team's namespace will do; the canary's is the one
			// the harness watches.
			var canaryNS string
			list := &corev1.NamespaceList{}
			if err := suite.client.List(context.Background(), list); err != nil {
				t.Fatal(err)
			}
			for _, ns := range list.Items {
				if strings.HasPrefix(ns.Name, "canary") {
					canaryNS = ns.Name
				}
			}
			if canaryNS == "" {
				t.Fatal("no canary namespace")
			}
			return plainAttack(fixed(map[string]string{"cm.yaml": fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: canary, namespace: %s}
data: {value: owned}
`, canaryNS)}), v1alpha2.ReasonMissingPermissions, fixed([]string{"Role in namespace " + canaryNS}))(t, team)
		},
	},
	hostileCase{
		name: "bundle creates a Namespace",
		attack: plainAttack(fixed(map[string]string{"ns.yaml": `apiVersion: v1
kind: Namespace
metadata: {name: hostile-new-namespace}
`}), v1alpha2.ReasonMissingPermissions, fixed([]string{"ClusterRole", "namespaces"})),
	},
	hostileCase{
		name: "YAML alias bomb (billion laughs)",
		attack: plainAttack(fixed(map[string]string{"bomb.yaml": yamlBomb}),
			v1alpha2.ReasonInvalidContent, fixed([]string{"manifests/bomb.yaml"})),
	},
	hostileCase{
		name: "the same object twice",
		attack: plainAttack(fixed(map[string]string{
			"a.yaml": configMapYAML("twice", "a"),
			"b.yaml": configMapYAML("twice", "b"),
		}), v1alpha2.ReasonInvalidContent, fixed([]string{"defined twice", "manifests/a.yaml", "manifests/b.yaml"})),
	},
	hostileCase{
		name: "document that is not an object",
		attack: plainAttack(fixed(map[string]string{"junk.yaml": "- just\n- a list\n"}),
			v1alpha2.ReasonInvalidContent, fixed([]string{"manifests/junk.yaml"})),
	},
	hostileCase{
		name: "install as another team's ServiceAccount",
		attack: func(t *testing.T, team *hostileTeam) func(*testing.T) {
			victim := testNamespace(t, "victim")
			sa := installerAccount(t, victim)
			bd := team.bd(envtest.UniqueName("attack"), v1alpha2.ClassPlain, ownSource(t, map[string]string{"cm.yaml": configMapYAML("x", "y")}))
			bd.Spec.InstallNamespace = victim
			bd.Spec.ServiceAccount.Name = sa
			team.allowReferences(t, bd.Spec.Sources, bd.Spec.Config)
			err := team.client.Create(context.Background(), bd)
			errContains(t, err, "rukpak-install-authorization", `may not impersonate serviceaccounts "installer" in namespace "`+victim+`"`)
			return nil
		},
	},
	hostileCase{
		name: "install as the manager (no serviceAccount)",
		attack: func(t *testing.T, team *hostileTeam) func(*testing.T) {
			bd := team.bd(envtest.UniqueName("attack"), v1alpha2.ClassPlain, ownSource(t, map[string]string{"cm.yaml": configMapYAML("x", "y")}))
			bd.Spec.ServiceAccount = nil
			team.allowReferences(t, bd.Spec.Sources, bd.Spec.Config)
			err := team.client.Create(context.Background(), bd)
			errContains(t, err, `may not impersonate serviceaccounts "rukpak-manager" in namespace "rukpak-system"`)
			return nil
		},
	},
	hostileCase{
		name: "use a class the team was not granted",
		attack: func(t *testing.T, team *hostileTeam) func(*testing.T) {
			class := &v1alpha2.ProvisionerClass{
				ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("exotic")},
				Spec:       v1alpha2.ProvisionerClassSpec{ControllerName: v1alpha2.ControllerPlain},
			}
			createOwned(t, class)
			bd := team.bd(envtest.UniqueName("attack"), class.Name, ownSource(t, map[string]string{"cm.yaml": configMapYAML("x", "y")}))
			team.allowReferences(t, bd.Spec.Sources, bd.Spec.Config)
			err := team.client.Create(context.Background(), bd)
			errContains(t, err, `may not use provisionerclasses "`+class.Name+`"`)
			return nil
		},
	},
	hostileCase{
		name: "take over another team's BundleDeployment",
		attack: func(t *testing.T, team *hostileTeam) func(*testing.T) {
			var canaryBD *v1alpha2.BundleDeployment
			list := &v1alpha2.BundleDeploymentList{}
			if err := suite.client.List(context.Background(), list); err != nil {
				t.Fatal(err)
			}
			for i := range list.Items {
				if strings.HasPrefix(list.Items[i].Name, "canary") {
					canaryBD = &list.Items[i]
				}
			}
			if canaryBD == nil {
				t.Fatal("no canary BundleDeployment")
			}
			// Point the canary at the attacker's content: the update
			// changes the spec, so it needs the right to impersonate the
			// canary's ServiceAccount.
			canaryBD.Spec.Sources = ownSource(t, map[string]string{"cm.yaml": configMapYAML("canary", "owned")})
			team.allowReferences(t, canaryBD.Spec.Sources, canaryBD.Spec.Config)
			err := team.client.Update(context.Background(), canaryBD)
			errContains(t, err, "may not impersonate serviceaccounts", canaryBD.Spec.InstallNamespace)
			return nil
		},
	},
	hostileCase{
		name: "claim to be someone else in requested-by",
		attack: func(t *testing.T, team *hostileTeam) func(*testing.T) {
			name := envtest.UniqueName("attack")
			bd := team.bd(name, v1alpha2.ClassPlain, ownSource(t, map[string]string{"cm.yaml": configMapYAML("spoof", "y")}))
			bd.Annotations = map[string]string{
				v1alpha2.AnnotationRequestedBy:       "system:admin",
				v1alpha2.AnnotationRequestedByGroups: "system:masters",
			}
			team.create(t, bd)
			return func(t *testing.T) {
				got := waitInstalled(t, name)
				if by := got.Annotations[v1alpha2.AnnotationRequestedBy]; by != team.user {
					t.Fatalf("requested-by is %q, want the real user %q", by, team.user)
				}
				if groups := got.Annotations[v1alpha2.AnnotationRequestedByGroups]; strings.Contains(groups, "system:masters") {
					t.Fatalf("requested-by-groups kept the claimed group: %q", groups)
				}
				cm := &corev1.ConfigMap{}
				if err := suite.client.Get(context.Background(), client.ObjectKey{Namespace: team.ns, Name: "spoof"}, cm); err != nil {
					t.Fatalf("the bundle, installed as the team's own ServiceAccount, is missing: %v", err)
				}
			}
		},
	},
)
