package review

import (
	"cmp"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// scopedRule is a rule and where it applies ("" for cluster-wide).
type scopedRule struct {
	namespace string
	rbacv1.PolicyRule
}

// sep joins list entries into map keys; no RBAC name holds it.
const sep = "\x00"

// compact merges atoms back into as few rules as an admin would write:
// per scope, names with the same verbs, then resources with the same verbs
// and names, then groups with the same resources, verbs and names; URLs
// with the same verbs. Rules are sorted cluster-wide first, then by
// namespace, and their lists are sorted.
func compact(s atomSet) []scopedRule {
	byScope := map[string][]atom{}
	for a := range s {
		byScope[a.namespace] = append(byScope[a.namespace], a)
	}
	var out []scopedRule
	for ns, atoms := range byScope {
		for _, r := range compactScope(atoms) {
			out = append(out, scopedRule{namespace: ns, PolicyRule: r})
		}
	}
	slices.SortFunc(out, func(a, b scopedRule) int {
		return cmp.Or(
			cmp.Compare(a.namespace, b.namespace),
			cmp.Compare(len(a.NonResourceURLs), len(b.NonResourceURLs)),
			slices.Compare(a.APIGroups, b.APIGroups),
			slices.Compare(a.Resources, b.Resources),
			slices.Compare(a.ResourceNames, b.ResourceNames),
			slices.Compare(a.NonResourceURLs, b.NonResourceURLs),
			slices.Compare(a.Verbs, b.Verbs),
		)
	})
	return out
}

// compactScope merges the atoms of one scope.
func compactScope(atoms []atom) []rbacv1.PolicyRule {
	type resName struct{ group, resource, name string }
	verbs := map[resName][]string{}
	urlVerbs := map[string][]string{}
	for _, a := range atoms {
		if a.url != "" {
			urlVerbs[a.url] = append(urlVerbs[a.url], a.verb)
			continue
		}
		k := resName{a.group, a.resource, a.name}
		verbs[k] = append(verbs[k], a.verb)
	}

	// Names with the same verbs on the same resource.
	type resVerbs struct{ group, resource, verbs string }
	names := map[resVerbs][]string{}
	for k, vs := range verbs {
		rv := resVerbs{k.group, k.resource, joinSorted(vs)}
		names[rv] = append(names[rv], k.name)
	}
	// Resources with the same verbs and names in the same group.
	type groupVerbsNames struct{ group, verbs, names string }
	resources := map[groupVerbsNames][]string{}
	for k, ns := range names {
		g := groupVerbsNames{k.group, k.verbs, joinSorted(ns)}
		resources[g] = append(resources[g], k.resource)
	}
	// Groups with the same resources, verbs and names.
	type verbsResourcesNames struct{ verbs, resources, names string }
	groups := map[verbsResourcesNames][]string{}
	for k, rs := range resources {
		v := verbsResourcesNames{k.verbs, joinSorted(rs), k.names}
		groups[v] = append(groups[v], k.group)
	}
	var out []rbacv1.PolicyRule
	for k, gs := range groups {
		slices.Sort(gs)
		r := rbacv1.PolicyRule{Verbs: split(k.verbs), APIGroups: gs, Resources: split(k.resources)}
		if n := split(k.names); !slices.Equal(n, []string{""}) {
			r.ResourceNames = n
		}
		out = append(out, r)
	}

	urls := map[string][]string{}
	for u, vs := range urlVerbs {
		k := joinSorted(vs)
		urls[k] = append(urls[k], u)
	}
	for k, us := range urls {
		slices.Sort(us)
		out = append(out, rbacv1.PolicyRule{Verbs: split(k), NonResourceURLs: us})
	}
	return out
}

// joinSorted returns ss sorted, without duplicates, joined by sep.
func joinSorted(ss []string) string {
	ss = slices.Clone(ss)
	slices.Sort(ss)
	return strings.Join(slices.Compact(ss), sep)
}

// split undoes joinSorted.
func split(s string) []string { return strings.Split(s, sep) }

// storedRule returns r with its lists cut to MaxRuleItems entries and
// their strings to their bounds.
func storedRule(r scopedRule) v1alpha2.ReviewRule {
	out := v1alpha2.ReviewRule{Namespace: cut(r.namespace, maxShort)}
	list := func(ss []string, n int) []string {
		if len(ss) > MaxRuleItems {
			out.Truncated = true
		}
		return cutAll(first(ss, MaxRuleItems), n)
	}
	out.Verbs = list(r.Verbs, maxShort)
	out.APIGroups = list(r.APIGroups, maxName)
	out.Resources = list(r.Resources, maxName)
	out.ResourceNames = list(r.ResourceNames, maxName)
	out.NonResourceURLs = list(r.NonResourceURLs, maxName)
	return out
}
