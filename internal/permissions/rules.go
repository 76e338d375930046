package permissions

import (
	"cmp"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// Verbs are what the apply engine does to every object it manages: get,
// list and watch (drift detection and health reads), create and patch
// (server-side apply) and delete (prune and uninstall). Sorted.
var Verbs = []string{"create", "delete", "get", "list", "patch", "watch"}

// Rule is a permission in a namespace; Namespace "" means cluster-wide,
// which needs a ClusterRole and a ClusterRoleBinding.
type Rule struct {
	// Namespace is where the rule applies; "" for cluster-wide.
	Namespace string
	rbacv1.PolicyRule
}

// resourceKey is one resource in one namespace.
type resourceKey struct {
	namespace, group, resource string
}

// Required returns every rule targets need, merged: one rule per
// (namespace, apiGroup), since every target needs all of Verbs, with
// resources and verbs sorted. Rules are sorted cluster-wide first, then by
// namespace, group and resources.
func Required(targets []Target) []Rule {
	need := map[resourceKey][]string{}
	for _, t := range targets {
		need[keyOf(t)] = Verbs
	}
	return merge(need)
}

// keyOf returns the resource and namespace of t.
func keyOf(t Target) resourceKey {
	return resourceKey{namespace: t.Namespace, group: t.Resource.Group, resource: t.Resource.Resource}
}

// merge turns verbs per resource into rules: one rule per namespace, group
// and verb set, holding every resource with exactly that verb set.
func merge(verbs map[resourceKey][]string) []Rule {
	type ruleKey struct{ namespace, group, verbs string }
	byRule := map[ruleKey]*Rule{}
	for k, vs := range verbs {
		if len(vs) == 0 {
			continue
		}
		vs = slices.Clone(vs)
		slices.Sort(vs)
		vs = slices.Compact(vs)
		rk := ruleKey{k.namespace, k.group, strings.Join(vs, ",")}
		r, ok := byRule[rk]
		if !ok {
			r = &Rule{Namespace: k.namespace, PolicyRule: rbacv1.PolicyRule{APIGroups: []string{k.group}, Verbs: vs}}
			byRule[rk] = r
		}
		r.Resources = append(r.Resources, k.resource)
	}
	if len(byRule) == 0 {
		return nil
	}
	rules := make([]Rule, 0, len(byRule))
	for _, r := range byRule {
		slices.Sort(r.Resources)
		r.Resources = slices.Compact(r.Resources)
		rules = append(rules, *r)
	}
	sortRules(rules)
	return rules
}

// sortRules orders rules cluster-wide first, then by namespace, group,
// resources and verbs.
func sortRules(rules []Rule) {
	slices.SortFunc(rules, func(a, b Rule) int {
		return cmp.Or(
			cmp.Compare(a.Namespace, b.Namespace), // "" (cluster-wide) sorts first
			slices.Compare(a.APIGroups, b.APIGroups),
			slices.Compare(a.Resources, b.Resources),
			slices.Compare(a.Verbs, b.Verbs),
		)
	})
}
