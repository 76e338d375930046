package review

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/permissions"
)

// identityFindings are the rules the install identity needs for the new
// revision and did not for the active one, and the reverse, unbounded.
type identityFindings struct {
	needed, unneeded []scopedRule
}

// reviewIdentity compares permissions.Required of the two revisions'
// objects. With no active revision every need is new.
func reviewIdentity(active, next *revision) (identityFindings, error) {
	was, err := requiredAtoms(active)
	if err != nil {
		return identityFindings{}, err
	}
	is, err := requiredAtoms(next)
	if err != nil {
		return identityFindings{}, err
	}
	return identityFindings{needed: compact(is.notCoveredBy(was)), unneeded: compact(was.notCoveredBy(is))}, nil
}

// requiredAtoms returns the atoms of permissions.Required for r's objects.
func requiredAtoms(r *revision) (atomSet, error) {
	targets := make([]permissions.Target, len(r.order))
	for i, o := range r.order {
		gvk := o.obj.GroupVersionKind()
		targets[i] = permissions.Target{
			Resource:  schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: o.resource},
			Namespace: o.key.namespace,
			Name:      o.key.name,
		}
	}
	s := atomSet{}
	for _, rule := range permissions.Required(targets) {
		if err := s.add(rule.Namespace, []rbacv1.PolicyRule{rule.PolicyRule}, newBudget()); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// stored returns f bounded.
func (f identityFindings) stored() v1alpha2.ReviewIdentity {
	out := v1alpha2.ReviewIdentity{NeededCount: count(len(f.needed)), UnneededCount: count(len(f.unneeded))}
	for _, r := range first(f.needed, MaxEntries) {
		out.Needed = append(out.Needed, storedRule(r))
	}
	for _, r := range first(f.unneeded, MaxEntries) {
		out.Unneeded = append(out.Unneeded, storedRule(r))
	}
	return out
}
