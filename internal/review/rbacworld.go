package review

import (
	"context"
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The kinds the RBAC review reads.
var (
	roleGK               = schema.GroupKind{Group: rbacv1.GroupName, Kind: "Role"}
	clusterRoleGK        = schema.GroupKind{Group: rbacv1.GroupName, Kind: "ClusterRole"}
	roleBindingGK        = schema.GroupKind{Group: rbacv1.GroupName, Kind: "RoleBinding"}
	clusterRoleBindingGK = schema.GroupKind{Group: rbacv1.GroupName, Kind: "ClusterRoleBinding"}
)

// rbacGVK returns the rbac.authorization.k8s.io/v1 kind of gk.
func rbacGVK(gk schema.GroupKind) schema.GroupVersionKind {
	return rbacv1.SchemeGroupVersion.WithKind(gk.Kind)
}

// roleRef names a Role (in a namespace) or a ClusterRole.
type roleRef struct {
	kind, namespace, name string
}

// liveRBAC is the live RBAC both sides of the review read, read once.
type liveRBAC struct {
	live Live
	// clusterRoles are every live ClusterRole by name; nil until listed.
	clusterRoles map[string]*unstructured.Unstructured
	// roles are the live Roles read so far (nil for none).
	roles map[roleRef]*unstructured.Unstructured
}

// listClusterRoles returns the live ClusterRoles by name.
func (l *liveRBAC) listClusterRoles(ctx context.Context) (map[string]*unstructured.Unstructured, error) {
	if l.clusterRoles != nil {
		return l.clusterRoles, nil
	}
	l.clusterRoles = map[string]*unstructured.Unstructured{}
	if l.live == nil {
		return l.clusterRoles, nil
	}
	list, err := l.live.List(ctx, rbacGVK(clusterRoleGK))
	if err != nil {
		return nil, fmt.Errorf("listing live ClusterRoles: %w", err)
	}
	for _, u := range list {
		l.clusterRoles[u.GetName()] = u
	}
	return l.clusterRoles, nil
}

// role returns the live Role ref, or nil.
func (l *liveRBAC) role(ctx context.Context, ref roleRef) (*unstructured.Unstructured, error) {
	if u, ok := l.roles[ref]; ok {
		return u, nil
	}
	u, err := getLive(ctx, l.live, rbacGVK(roleGK), ref.namespace, ref.name)
	if err != nil {
		return nil, err
	}
	l.roles[ref] = u
	return u, nil
}

// side is the RBAC on one side of the review: the live RBAC with the
// revision's objects over it.
type side struct {
	live *liveRBAC
	// objs is this side's version of every object either revision has:
	// nil for one it does not have.
	objs map[key]*unstructured.Unstructured
	// clusterRoles are the ClusterRoles of this side, by name.
	clusterRoles map[string]*unstructured.Unstructured
	// rules memoizes the atoms of each role, cluster-wide.
	rules map[roleRef]atomSet
	// visiting guards against aggregation cycles.
	visiting map[string]bool
	// budget bounds the atoms both sides hold.
	budget *budget
}

// newSide returns the side whose revision objects are objs.
func newSide(ctx context.Context, live *liveRBAC, objs map[key]*unstructured.Unstructured, b *budget) (*side, error) {
	s := &side{live: live, objs: objs, clusterRoles: map[string]*unstructured.Unstructured{}, rules: map[roleRef]atomSet{}, visiting: map[string]bool{}, budget: b}
	listed, err := live.listClusterRoles(ctx)
	if err != nil {
		return nil, err
	}
	for name, u := range listed {
		if _, owned := objs[key{group: rbacv1.GroupName, kind: "ClusterRole", name: name}]; !owned {
			s.clusterRoles[name] = u
		}
	}
	for k, u := range objs {
		if k.groupKind() == clusterRoleGK && u != nil {
			s.clusterRoles[k.name] = u
		}
	}
	return s, nil
}

// roleObject returns the object ref names on this side, or nil.
func (s *side) roleObject(ctx context.Context, ref roleRef) (*unstructured.Unstructured, error) {
	if ref.kind == clusterRoleGK.Kind {
		return s.clusterRoles[ref.name], nil
	}
	if u, owned := s.objs[key{group: rbacv1.GroupName, kind: ref.kind, namespace: ref.namespace, name: ref.name}]; owned {
		return u, nil
	}
	return s.live.role(ctx, ref)
}

// atomsOf returns what ref grants on this side, cluster-wide: its rules,
// or for a ClusterRole with an aggregationRule the rules of every other
// ClusterRole of this side its selectors match.
func (s *side) atomsOf(ctx context.Context, ref roleRef) (atomSet, error) {
	if a, ok := s.rules[ref]; ok {
		return a, nil
	}
	u, err := s.roleObject(ctx, ref)
	if err != nil || u == nil {
		return atomSet{}, err
	}
	var role rbacv1.ClusterRole // a Role decodes into it as well
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &role); err != nil {
		return nil, fmt.Errorf("decoding %s %s: %w", ref.kind, ref.name, err)
	}
	atoms := atomSet{}
	if ref.kind == clusterRoleGK.Kind && role.AggregationRule != nil {
		if err := s.aggregate(ctx, ref.name, role.AggregationRule, atoms); err != nil {
			return nil, err
		}
	} else if err := atoms.add("", role.Rules, s.budget); err != nil {
		return nil, fmt.Errorf("%s %s: %w", ref.kind, ref.name, err)
	}
	s.rules[ref] = atoms
	return atoms, nil
}

// aggregate adds to atoms the atoms of every ClusterRole other than name
// that a selector of rule matches.
func (s *side) aggregate(ctx context.Context, name string, rule *rbacv1.AggregationRule, atoms atomSet) error {
	s.visiting[name] = true
	defer delete(s.visiting, name)
	selectors := make([]labels.Selector, 0, len(rule.ClusterRoleSelectors))
	for i := range rule.ClusterRoleSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&rule.ClusterRoleSelectors[i])
		if err != nil {
			return fmt.Errorf("ClusterRole %s: aggregationRule selector %d: %w", name, i, err)
		}
		selectors = append(selectors, sel)
	}
	names := make([]string, 0, len(s.clusterRoles))
	for n := range s.clusterRoles {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if n == name || s.visiting[n] {
			continue
		}
		set := labels.Set(s.clusterRoles[n].GetLabels())
		if !slices.ContainsFunc(selectors, func(sel labels.Selector) bool { return sel.Matches(set) }) {
			continue
		}
		matched, err := s.atomsOf(ctx, roleRef{kind: clusterRoleGK.Kind, name: n})
		if err != nil {
			return err
		}
		if err := atoms.union(matched, s.budget); err != nil {
			return fmt.Errorf("ClusterRole %s: %w", name, err)
		}
	}
	return nil
}

// aggregatesOwned returns the names of the ClusterRoles of this side
// whose rules may change with the revisions: those with an
// aggregationRule that selects, directly or through other aggregating
// ClusterRoles, a ClusterRole of either revision (ps). An aggregating
// ClusterRole that selects none of them (the cluster's admin, edit and
// view, for a revision of Roles only) is not expanded.
func (s *side) aggregatesOwned(ps *pairs) []string {
	reached := map[string]bool{}
	for k := range ps.owned {
		if k.groupKind() == clusterRoleGK {
			reached[k.name] = true
		}
	}
	aggregating := map[string][]labels.Selector{}
	for _, n := range s.aggregated() {
		var rule rbacv1.AggregationRule
		if m, found, _ := unstructured.NestedFieldNoCopy(s.clusterRoles[n].Object, "aggregationRule"); found {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"clusterRoleSelectors": nestedSelectors(m)}, &rule); err != nil {
				aggregating[n] = []labels.Selector{labels.Everything()} // unreadable: taken as changing
				continue
			}
		}
		for i := range rule.ClusterRoleSelectors {
			sel, err := metav1.LabelSelectorAsSelector(&rule.ClusterRoleSelectors[i])
			if err != nil {
				sel = labels.Everything()
			}
			aggregating[n] = append(aggregating[n], sel)
		}
	}
	var out []string
	for grew := true; grew; {
		grew = false
		for n, sels := range aggregating {
			if reached[n] && !slices.Contains(out, n) {
				out = append(out, n)
			}
			if reached[n] {
				continue
			}
			for r := range reached {
				u := s.clusterRoles[r]
				if u == nil {
					continue
				}
				set := labels.Set(u.GetLabels())
				if slices.ContainsFunc(sels, func(sel labels.Selector) bool { return sel.Matches(set) }) {
					reached[n], grew = true, true
					out = append(out, n)
					break
				}
			}
		}
	}
	return out
}

// nestedSelectors returns the clusterRoleSelectors of an aggregationRule
// value, or nil.
func nestedSelectors(rule any) any {
	if m, ok := rule.(map[string]any); ok {
		return m["clusterRoleSelectors"]
	}
	return nil
}

// aggregated returns the names of the ClusterRoles of this side that have
// an aggregationRule.
func (s *side) aggregated() []string {
	var out []string
	for n, u := range s.clusterRoles {
		if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "aggregationRule"); found {
			out = append(out, n)
		}
	}
	return out
}
