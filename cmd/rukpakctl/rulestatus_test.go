package main

import (
	"testing"

	"github.com/rukpak/rukpak/internal/permissions"
	rbacv1 "k8s.io/api/rbac/v1"
)

func TestRuleStatus(t *testing.T) {
	required := permissions.Rule{Namespace: "a", PolicyRule: rbacv1.PolicyRule{
		APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: permissions.Verbs}}
	rule := func(resources []string, verbs ...string) permissions.Rule {
		return permissions.Rule{Namespace: "a", PolicyRule: rbacv1.PolicyRule{APIGroups: []string{""}, Resources: resources, Verbs: verbs}}
	}
	tests := []struct {
		name    string
		missing []permissions.Rule
		want    string
	}{
		{name: "nothing missing", want: "OK"},
		{name: "another namespace", missing: []permissions.Rule{{Namespace: "b", PolicyRule: required.PolicyRule}}, want: "OK"},
		{name: "everything missing", missing: []permissions.Rule{rule([]string{"configmaps", "secrets"}, permissions.Verbs...)}, want: "MISSING"},
		{name: "some verbs of one resource",
			missing: []permissions.Rule{rule([]string{"secrets"}, "create", "list", "watch")},
			want:    "MISSING secrets: create,list,watch"},
		{name: "all of one resource",
			missing: []permissions.Rule{rule([]string{"secrets"}, permissions.Verbs...)},
			want:    "MISSING secrets: create,delete,get,list,patch,watch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ruleStatus(required, lackedVerbs(tt.missing)); got != tt.want {
				t.Errorf("ruleStatus = %q, want %q", got, tt.want)
			}
		})
	}
}
