package permissions

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

func TestRoles(t *testing.T) {
	rules := []Rule{
		rule("b", "", []string{"configmaps"}),
		rule("", "rbac.authorization.k8s.io", []string{"clusterrolebindings"}),
		rule("a", "", []string{"secrets"}, "get"),
		rule("a", "apps", []string{"deployments"}),
	}
	tests := []struct {
		name  string
		rules []Rule
		want  []string // kind/namespace/name in order
	}{
		{name: "nothing", rules: nil, want: nil},
		{name: "namespaced only", rules: rules[:1], want: []string{"Role/b/bd-installer", "RoleBinding/b/bd-installer"}},
		{name: "cluster-wide first, then namespaces in order", rules: rules, want: []string{
			"ClusterRole//bd-installer", "ClusterRoleBinding//bd-installer",
			"Role/a/bd-installer", "RoleBinding/a/bd-installer",
			"Role/b/bd-installer", "RoleBinding/b/bd-installer",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := Roles("bd-installer", "team-a", "installer", tt.rules)
			var got []string
			for _, o := range objs {
				got = append(got, o.GetObjectKind().GroupVersionKind().Kind+"/"+o.GetNamespace()+"/"+o.GetName())
				if o.GetObjectKind().GroupVersionKind().GroupVersion() != rbacv1.SchemeGroupVersion {
					t.Errorf("%s has apiVersion %q", o.GetName(), o.GetObjectKind().GroupVersionKind().GroupVersion())
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("Roles = %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("Roles = %v, want %v", got, tt.want)
				}
			}
		})
	}
}

// TestRolesContent checks the rules and bindings of the objects Roles
// makes, as the YAML an admin would apply.
func TestRolesContent(t *testing.T) {
	objs := Roles("bd-installer", "team-a", "installer", []Rule{
		rule("", "rbac.authorization.k8s.io", []string{"clusterrolebindings"}),
		rule("a", "", []string{"secrets"}, "get"),
		rule("a", "apps", []string{"deployments"}),
	})
	want := []string{
		`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: bd-installer
rules:
- apiGroups:
  - rbac.authorization.k8s.io
  resources:
  - clusterrolebindings
  verbs:
  - create
  - delete
  - get
  - list
  - patch
  - watch
`,
		`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: bd-installer
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: bd-installer
subjects:
- kind: ServiceAccount
  name: installer
  namespace: team-a
`,
		`apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: bd-installer
  namespace: a
rules:
- apiGroups:
  - ""
  resources:
  - secrets
  verbs:
  - get
- apiGroups:
  - apps
  resources:
  - deployments
  verbs:
  - create
  - delete
  - get
  - list
  - patch
  - watch
`,
		`apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: bd-installer
  namespace: a
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: bd-installer
subjects:
- kind: ServiceAccount
  name: installer
  namespace: team-a
`,
	}
	if len(objs) != len(want) {
		t.Fatalf("got %d objects, want %d", len(objs), len(want))
	}
	for i, o := range objs {
		if got := toYAML(t, o); got != want[i] {
			t.Errorf("object %d:\n%s\nwant\n%s", i, got, want[i])
		}
	}
}

// toYAML writes o as YAML without its empty creationTimestamp.
func toYAML(t *testing.T, o client.Object) string {
	t.Helper()
	data, err := yaml.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	delete(m["metadata"].(map[string]any), "creationTimestamp")
	data, err = yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
