package permissions

import (
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	configMaps   = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secrets      = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	deployments  = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	crbs         = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}
	clusterRoles = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
	crds         = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// rule is a Rule for tests.
func rule(ns, group string, resources []string, verbs ...string) Rule {
	if len(verbs) == 0 {
		verbs = Verbs
	}
	return Rule{Namespace: ns, PolicyRule: rbacv1.PolicyRule{APIGroups: []string{group}, Resources: resources, Verbs: verbs}}
}

func TestServiceAccount(t *testing.T) {
	s := ServiceAccount("team-a", "installer")
	want := Subject{User: "system:serviceaccount:team-a:installer",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:team-a", "system:authenticated"}}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("ServiceAccount = %+v, want %+v", s, want)
	}
	tests := []struct {
		subject Subject
		want    string
	}{
		{s, "ServiceAccount team-a/installer"},
		{Subject{User: "alice"}, "user alice"},
		{Subject{User: "system:serviceaccount:broken"}, "user system:serviceaccount:broken"},
		{Subject{User: "system:serviceaccount:a:b:c"}, "user system:serviceaccount:a:b:c"},
	}
	for _, tt := range tests {
		if got := tt.subject.String(); got != tt.want {
			t.Errorf("%q.String() = %q, want %q", tt.subject.User, got, tt.want)
		}
	}
}

func TestRequired(t *testing.T) {
	tests := []struct {
		name    string
		targets []Target
		want    []Rule
	}{
		{name: "nothing", targets: nil, want: nil},
		{name: "one object", targets: []Target{{Resource: configMaps, Namespace: "a", Name: "x"}},
			want: []Rule{rule("a", "", []string{"configmaps"})}},
		{name: "resources of one group and namespace merge, duplicates dropped",
			targets: []Target{
				{Resource: secrets, Namespace: "a", Name: "s"},
				{Resource: configMaps, Namespace: "a", Name: "x"},
				{Resource: configMaps, Namespace: "a", Name: "y"},
			},
			want: []Rule{rule("a", "", []string{"configmaps", "secrets"})}},
		{name: "cluster-wide first, then namespaces, then groups",
			targets: []Target{
				{Resource: deployments, Namespace: "b", Name: "d"},
				{Resource: configMaps, Namespace: "b", Name: "x"},
				{Resource: configMaps, Namespace: "a", Name: "x"},
				{Resource: crds, Name: "widgets.example.com"},
				{Resource: crbs, Name: "c"},
				{Resource: clusterRoles, Name: "c"},
			},
			want: []Rule{
				rule("", "apiextensions.k8s.io", []string{"customresourcedefinitions"}),
				rule("", "rbac.authorization.k8s.io", []string{"clusterrolebindings", "clusterroles"}),
				rule("a", "", []string{"configmaps"}),
				rule("b", "", []string{"configmaps"}),
				rule("b", "apps", []string{"deployments"}),
			}},
		{name: "versions do not matter",
			targets: []Target{
				{Resource: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, Namespace: "a", Name: "x"},
				{Resource: schema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "widgets"}, Namespace: "a", Name: "y"},
			},
			want: []Rule{rule("a", "example.com", []string{"widgets"})}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Required(tt.targets); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Required =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestMerge(t *testing.T) {
	k := func(ns, group, resource string) resourceKey { return resourceKey{ns, group, resource} }
	tests := []struct {
		name  string
		verbs map[resourceKey][]string
		want  []Rule
	}{
		{name: "empty", verbs: map[resourceKey][]string{}, want: nil},
		{name: "no verbs is no rule", verbs: map[resourceKey][]string{k("a", "", "secrets"): nil}, want: nil},
		{name: "equal verb sets merge, unequal ones do not; verbs sorted and deduplicated",
			verbs: map[resourceKey][]string{
				k("a", "", "secrets"):         {"watch", "list", "create", "list"},
				k("a", "", "configmaps"):      {"create", "list", "watch"},
				k("a", "", "services"):        Verbs,
				k("a", "apps", "deployments"): {"create", "list", "watch"},
			},
			want: []Rule{
				rule("a", "", []string{"configmaps", "secrets"}, "create", "list", "watch"),
				rule("a", "", []string{"services"}),
				rule("a", "apps", []string{"deployments"}, "create", "list", "watch"),
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := merge(tt.verbs); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("merge =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}
