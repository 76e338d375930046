package review

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// subjectKey is a subject of a binding; namespace only for a
// ServiceAccount.
type subjectKey struct {
	kind, namespace, name string
}

// subjectRule is a rule a subject gains or loses.
type subjectRule struct {
	subject subjectKey
	rule    scopedRule
}

// rbacFindings are what every subject gains and loses, unbounded.
type rbacFindings struct {
	subjects     int
	gained, lost []subjectRule
}

// reviewRBAC computes the effective rules every subject gains and loses:
// through the bindings either revision has, and through live bindings to
// a role whose rules change (a revision's role, or a live ClusterRole that
// aggregates a revision's).
func reviewRBAC(ctx context.Context, live Live, ps *pairs) (rbacFindings, error) {
	if !slices.ContainsFunc(ps.list, func(p *pair) bool { return grantsOrHoldsRules(p.key.groupKind()) }) {
		return rbacFindings{}, nil // nothing of either revision can change who may do what
	}
	l := &liveRBAC{live: live, roles: map[roleRef]*unstructured.Unstructured{}}
	beforeObjs := map[key]*unstructured.Unstructured{}
	afterObjs := map[key]*unstructured.Unstructured{}
	for k, p := range ps.owned {
		beforeObjs[k], afterObjs[k] = p.before, p.after
	}
	b := newBudget()
	before, err := newSide(ctx, l, beforeObjs, b)
	if err != nil {
		return rbacFindings{}, err
	}
	after, err := newSide(ctx, l, afterObjs, b)
	if err != nil {
		return rbacFindings{}, err
	}
	changed, err := changedRoles(ctx, ps, before, after)
	if err != nil {
		return rbacFindings{}, err
	}
	var extra []*unstructured.Unstructured
	if len(changed) > 0 {
		if extra, err = liveBindingsTo(ctx, live, changed, ps); err != nil {
			return rbacFindings{}, err
		}
	}
	was, err := before.grants(ctx, extra)
	if err != nil {
		return rbacFindings{}, fmt.Errorf("RBAC before the revision: %w", err)
	}
	is, err := after.grants(ctx, extra)
	if err != nil {
		return rbacFindings{}, fmt.Errorf("RBAC after the revision: %w", err)
	}
	return diffGrants(was, is), nil
}

// grantsOrHoldsRules reports whether objects of kind gk hold RBAC rules or
// grant them.
func grantsOrHoldsRules(gk schema.GroupKind) bool {
	switch gk {
	case roleGK, clusterRoleGK, roleBindingGK, clusterRoleBindingGK, csvGK:
		return true
	}
	return false
}

// changedRoles returns the roles whose rules differ between the sides:
// of the revisions' roles and of every aggregating ClusterRole.
func changedRoles(ctx context.Context, ps *pairs, before, after *side) (map[roleRef]bool, error) {
	candidates := map[roleRef]bool{}
	for k := range ps.owned {
		if k.groupKind() == roleGK || k.groupKind() == clusterRoleGK {
			candidates[roleRef{kind: k.kind, namespace: k.namespace, name: k.name}] = true
		}
	}
	for _, s := range []*side{before, after} {
		for _, n := range s.aggregatesOwned(ps) {
			candidates[roleRef{kind: clusterRoleGK.Kind, name: n}] = true
		}
	}
	changed := map[roleRef]bool{}
	for ref := range candidates {
		b, err := before.atomsOf(ctx, ref)
		if err != nil {
			return nil, err
		}
		a, err := after.atomsOf(ctx, ref)
		if err != nil {
			return nil, err
		}
		if len(a.notCoveredBy(b)) > 0 || len(b.notCoveredBy(a)) > 0 {
			changed[ref] = true
		}
	}
	return changed, nil
}

// liveBindingsTo lists the live RoleBindings and ClusterRoleBindings that
// neither revision has and that bind a role of changed.
func liveBindingsTo(ctx context.Context, live Live, changed map[roleRef]bool, ps *pairs) ([]*unstructured.Unstructured, error) {
	if live == nil {
		return nil, nil
	}
	var out []*unstructured.Unstructured
	for _, gk := range []schema.GroupKind{clusterRoleBindingGK, roleBindingGK} {
		list, err := live.List(ctx, rbacGVK(gk))
		if err != nil {
			return nil, fmt.Errorf("listing live %ss: %w", gk.Kind, err)
		}
		for _, u := range list {
			k := key{group: gk.Group, kind: gk.Kind, namespace: u.GetNamespace(), name: u.GetName()}
			if _, owned := ps.owned[k]; owned {
				continue
			}
			kind, _, _ := unstructured.NestedString(u.Object, "roleRef", "kind")
			name, _, _ := unstructured.NestedString(u.Object, "roleRef", "name")
			ref := roleRef{kind: kind, name: name}
			if kind == roleGK.Kind {
				ref.namespace = u.GetNamespace()
			}
			if changed[ref] {
				out = append(out, u)
			}
		}
	}
	return out, nil
}

// grants returns what every subject may do on this side, through the
// bindings and ClusterServiceVersions of the revision and extra.
func (s *side) grants(ctx context.Context, extra []*unstructured.Unstructured) (map[subjectKey]atomSet, error) {
	out := map[subjectKey]atomSet{}
	add := func(namespace string, u *unstructured.Unstructured) error {
		switch u.GroupVersionKind().GroupKind() {
		case roleBindingGK, clusterRoleBindingGK:
			return s.addBinding(ctx, namespace, u, out)
		case csvGK:
			return addCSV(namespace, u, out, s.budget)
		}
		return nil
	}
	for k, u := range s.objs {
		if u == nil {
			continue
		}
		if err := add(k.namespace, u); err != nil {
			return nil, err
		}
	}
	for _, u := range extra {
		if err := add(u.GetNamespace(), u); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// addBinding adds what binding u in namespace grants its subjects: a
// ClusterRoleBinding cluster-wide, a RoleBinding in its namespace (a
// ClusterRole's rules included, its nonResourceURLs not).
func (s *side) addBinding(ctx context.Context, namespace string, u *unstructured.Unstructured, out map[subjectKey]atomSet) error {
	var b rbacv1.RoleBinding // a ClusterRoleBinding decodes into it as well
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &b); err != nil {
		return fmt.Errorf("decoding %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	ref := roleRef{kind: clusterRoleGK.Kind, name: b.RoleRef.Name}
	if u.GetKind() != roleBindingGK.Kind {
		namespace = ""
	} else if b.RoleRef.Kind == roleGK.Kind {
		ref = roleRef{kind: roleGK.Kind, namespace: namespace, name: b.RoleRef.Name}
	}
	atoms, err := s.atomsOf(ctx, ref)
	if err != nil {
		return err
	}
	return grant(out, subjectsOf(b.Subjects, namespace), atoms.inNamespace(namespace), s.budget)
}

// grant adds atoms to every subject.
func grant(out map[subjectKey]atomSet, subjects []subjectKey, atoms atomSet, b *budget) error {
	for _, sub := range subjects {
		set, ok := out[sub]
		if !ok {
			set = atomSet{}
			out[sub] = set
		}
		if err := set.union(atoms, b); err != nil {
			return fmt.Errorf("%s %s: %w", sub.kind, sub.name, err)
		}
	}
	return nil
}

// subjectsOf returns the subjects of a binding in namespace ("" for a
// ClusterRoleBinding): a ServiceAccount without a namespace is in the
// binding's (and matches no one in a ClusterRoleBinding).
func subjectsOf(subjects []rbacv1.Subject, namespace string) []subjectKey {
	var out []subjectKey
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind, rbacv1.GroupKind:
			out = append(out, subjectKey{kind: s.Kind, name: s.Name})
		case rbacv1.ServiceAccountKind:
			ns := cmp.Or(s.Namespace, namespace)
			if ns != "" {
				out = append(out, subjectKey{kind: s.Kind, namespace: ns, name: s.Name})
			}
		}
	}
	return out
}

// diffGrants returns what each subject gains and loses, subjects sorted.
func diffGrants(before, after map[subjectKey]atomSet) rbacFindings {
	subjects := map[subjectKey]bool{}
	for k := range before {
		subjects[k] = true
	}
	for k := range after {
		subjects[k] = true
	}
	keys := make([]subjectKey, 0, len(subjects))
	for k := range subjects {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b subjectKey) int {
		return cmp.Or(cmp.Compare(a.kind, b.kind), cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.name, b.name))
	})
	var f rbacFindings
	for _, k := range keys {
		b, a := before[k], after[k]
		gained, lost := compact(a.notCoveredBy(b)), compact(b.notCoveredBy(a))
		if len(gained)+len(lost) > 0 {
			f.subjects++
		}
		for _, r := range gained {
			f.gained = append(f.gained, subjectRule{k, r})
		}
		for _, r := range lost {
			f.lost = append(f.lost, subjectRule{k, r})
		}
	}
	return f
}

// stored returns f bounded.
func (f rbacFindings) stored() v1alpha2.ReviewRBAC {
	out := v1alpha2.ReviewRBAC{SubjectCount: count(f.subjects), GainedCount: count(len(f.gained)), LostCount: count(len(f.lost))}
	for _, g := range first(f.gained, MaxEntries) {
		out.Gained = append(out.Gained, storedGrant(g))
	}
	for _, g := range first(f.lost, MaxEntries) {
		out.Lost = append(out.Lost, storedGrant(g))
	}
	return out
}

// storedGrant returns g bounded.
func storedGrant(g subjectRule) v1alpha2.ReviewGrant {
	return v1alpha2.ReviewGrant{
		Subject: v1alpha2.ReviewSubject{Kind: cut(g.subject.kind, maxShort), Namespace: cut(g.subject.namespace, maxShort), Name: cut(g.subject.name, maxName)},
		Rule:    storedRule(g.rule),
	}
}
