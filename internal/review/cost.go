package review

import (
	"fmt"
	"math"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// TooLargeError says a review would cost more than a review may: its RBAC
// rules expand to more than MaxAtoms atoms. Compute returns it before it
// expands anything when the estimate is over (Estimated set), or as soon
// as the atoms it holds reach the limit (the estimate leaves out roles
// the revisions do not ship, such as live ClusterRoles they aggregate).
type TooLargeError struct {
	// Estimated is the estimated number of atoms; 0 when the limit was
	// reached while expanding.
	Estimated int64
	// Limit is MaxAtoms.
	Limit int
	// Rule names the rule that costs most and what it expands to:
	// "Role op/big rules[0]: 8 verbs × 64 apiGroups × 30 resources × 31
	// resourceNames = 476160 atoms"; "" when the limit was reached while
	// expanding.
	Rule string
}

// Error implements error.
func (e *TooLargeError) Error() string {
	if e.Estimated == 0 {
		return fmt.Sprintf("the RBAC rules expand to more atoms (apiGroup × resource × verb × resourceName) than a review may hold (%d)", e.Limit)
	}
	s := fmt.Sprintf("the review would expand RBAC rules to about %d atoms (apiGroup × resource × verb × resourceName, for each role and each subject bound to it), over the %d a review may hold", e.Estimated, e.Limit)
	if e.Rule != "" {
		s += "; the largest rule: " + e.Rule
	}
	return s
}

// ruleCost is the cost of one rule of one object.
type ruleCost struct {
	atoms int64
	what  string
}

// estimate returns how many atoms reviewing the RBAC of revisions would
// hold at most, from the rules of the roles and ClusterServiceVersions
// they ship, each counted once for the role and once for every subject
// bound to it in the same revision, and the rule that costs most. It
// reads each object once and expands nothing.
func estimate(revisions ...[]*unstructured.Unstructured) (int64, ruleCost, error) {
	var total int64
	var largest ruleCost
	for _, objs := range revisions {
		subjects := map[roleRef]int64{}
		for _, u := range objs {
			gk := u.GroupVersionKind().GroupKind()
			if gk != roleBindingGK && gk != clusterRoleBindingGK {
				continue
			}
			var b rbacv1.RoleBinding
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &b); err != nil {
				return 0, ruleCost{}, fmt.Errorf("decoding %s %s: %w", u.GetKind(), u.GetName(), err)
			}
			ref := roleRef{kind: b.RoleRef.Kind, name: b.RoleRef.Name}
			if ref.kind == roleGK.Kind {
				ref.namespace = u.GetNamespace()
			}
			subjects[ref] += int64(len(b.Subjects))
		}
		for _, u := range objs {
			costs, err := objectCosts(u)
			if err != nil {
				return 0, ruleCost{}, err
			}
			ref := roleRef{kind: u.GetKind(), name: u.GetName()}
			if ref.kind == roleGK.Kind {
				ref.namespace = u.GetNamespace()
			}
			copies := 1 + subjects[ref]
			for _, c := range costs {
				total = addSat(total, mulSat(c.atoms, copies))
				if c.atoms > largest.atoms {
					largest = c
				}
			}
		}
	}
	return total, largest, nil
}

// objectCosts returns the cost of every rule of u, a Role, ClusterRole
// or ClusterServiceVersion; none for another kind.
func objectCosts(u *unstructured.Unstructured) ([]ruleCost, error) {
	gk := u.GroupVersionKind().GroupKind()
	name := u.GetKind() + " " + u.GetName()
	if u.GetNamespace() != "" {
		name = u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
	}
	var out []ruleCost
	add := func(field string, rules []rbacv1.PolicyRule) {
		for i, r := range rules {
			out = append(out, costOf(fmt.Sprintf("%s %s[%d]", name, field, i), r))
		}
	}
	switch gk {
	case roleGK, clusterRoleGK:
		var role rbacv1.ClusterRole
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &role); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", name, err)
		}
		add("rules", role.Rules)
	case csvGK:
		var csv csvPermissions
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &csv); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", name, err)
		}
		for i, p := range csv.Spec.Install.Spec.ClusterPermissions {
			add(fmt.Sprintf("spec.install.spec.clusterPermissions[%d].rules", i), p.Rules)
		}
		for i, p := range csv.Spec.Install.Spec.Permissions {
			add(fmt.Sprintf("spec.install.spec.permissions[%d].rules", i), p.Rules)
		}
	}
	return out, nil
}

// costOf returns how many atoms rule r expands to, and says how.
func costOf(where string, r rbacv1.PolicyRule) ruleCost {
	names := int64(max(1, len(r.ResourceNames)))
	resources := mulSat(mulSat(int64(len(r.APIGroups)), int64(len(r.Resources))), names)
	atoms := mulSat(int64(len(r.Verbs)), addSat(resources, int64(len(r.NonResourceURLs))))
	what := fmt.Sprintf("%s: %d verbs × %d apiGroups × %d resources", where, len(r.Verbs), len(r.APIGroups), len(r.Resources))
	if len(r.ResourceNames) > 0 {
		what += fmt.Sprintf(" × %d resourceNames", len(r.ResourceNames))
	}
	if len(r.NonResourceURLs) > 0 {
		what += fmt.Sprintf(" (+ %d nonResourceURLs)", len(r.NonResourceURLs))
	}
	return ruleCost{atoms: atoms, what: fmt.Sprintf("%s = %d atoms", what, atoms)}
}

// CheckCost fails with a *TooLargeError when reviewing the RBAC of
// revisions is estimated to hold more than MaxAtoms atoms; Compute checks
// it first, a caller may check the new revision alone before it reads
// the active one.
func CheckCost(revisions ...[]*unstructured.Unstructured) error {
	total, largest, err := estimate(revisions...)
	if err != nil {
		return err
	}
	if total > int64(atomLimit) {
		return &TooLargeError{Estimated: total, Limit: atomLimit, Rule: largest.what}
	}
	return nil
}

// mulSat and addSat multiply and add without overflowing.
func mulSat(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
