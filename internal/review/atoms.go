package review

import (
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// atomLimit is MaxAtoms; tests lower it.
var atomLimit = MaxAtoms

// atom is the smallest permission: one verb on one resource of one group,
// of one name or all names ("") in a scope, or one verb on one
// nonResourceURL. Wildcards ("*") are kept as written: an atom with a
// wildcard covers the atoms it matches (see covers).
type atom struct {
	// namespace is where the atom applies; "" for cluster-wide.
	namespace string
	// url is the nonResourceURL of a URL atom; "" for a resource atom.
	url                   string
	group, resource, name string
	verb                  string
}

// atomSet is a set of atoms.
type atomSet map[atom]struct{}

// budget is how many more atoms a review may hold: a bound on the memory
// and time a review takes, whatever the rules (MaxAtoms in all).
type budget struct {
	left int
}

// newBudget returns a budget of MaxAtoms.
func newBudget() *budget { return &budget{left: atomLimit} }

// take spends one atom; it fails once none is left.
func (b *budget) take() error {
	if b.left <= 0 {
		return &TooLargeError{Limit: atomLimit}
	}
	b.left--
	return nil
}

// put adds a to s, spending one atom of b if a is new.
func (s atomSet) put(a atom, b *budget) error {
	if _, ok := s[a]; ok {
		return nil
	}
	if err := b.take(); err != nil {
		return err
	}
	s[a] = struct{}{}
	return nil
}

// add adds the atoms of rules in namespace ("" for cluster-wide); a
// rule's nonResourceURLs count only cluster-wide, as RBAC grants them
// only through a ClusterRoleBinding.
func (s atomSet) add(namespace string, rules []rbacv1.PolicyRule, b *budget) error {
	for _, r := range rules {
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, v := range r.Verbs {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, n := range names {
						if err := s.put(atom{namespace: namespace, group: g, resource: res, name: n, verb: v}, b); err != nil {
							return err
						}
					}
				}
			}
			if namespace != "" {
				continue
			}
			for _, u := range r.NonResourceURLs {
				if err := s.put(atom{url: normalURL(u), verb: v}, b); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// union adds every atom of o to s.
func (s atomSet) union(o atomSet, b *budget) error {
	for a := range o {
		if err := s.put(a, b); err != nil {
			return err
		}
	}
	return nil
}

// inNamespace returns the atoms of s moved to namespace, dropping URL
// atoms when namespace is not "" (a RoleBinding does not grant them).
func (s atomSet) inNamespace(namespace string) atomSet {
	out := make(atomSet, len(s))
	for a := range s {
		if a.url != "" && namespace != "" {
			continue
		}
		if a.url == "" {
			a.namespace = namespace
		}
		out[a] = struct{}{}
	}
	return out
}

// covers reports whether an atom of s other than a itself (when
// skipSelf) grants everything a does, as the RBAC authorizer matches: "*"
// matches every verb, group and resource (subresources included), "*/x"
// every resource's subresource x, no resourceName every name, a
// cluster-wide atom every namespace, and a URL ending in "*" every URL it
// prefixes.
func (s atomSet) covers(a atom, skipSelf bool) bool {
	namespaces := []string{a.namespace}
	if a.namespace != "" {
		namespaces = append(namespaces, "")
	}
	verbs := alternatives(a.verb, rbacv1.VerbAll)
	has := func(b atom) bool {
		if skipSelf && b == a {
			return false
		}
		_, ok := s[b]
		return ok
	}
	if a.url != "" {
		for _, v := range verbs {
			for _, u := range urlCoverers(a.url) {
				if has(atom{url: u, verb: v}) {
					return true
				}
			}
		}
		return false
	}
	for _, ns := range namespaces {
		for _, g := range alternatives(a.group, rbacv1.APIGroupAll) {
			for _, r := range resourceCoverers(a.resource) {
				for _, v := range verbs {
					for _, n := range alternatives(a.name, "") {
						if has(atom{namespace: ns, group: g, resource: r, name: n, verb: v}) {
							return true
						}
					}
				}
			}
		}
	}
	return false
}

// normalURL returns u with trailing stars made one: "/a**" and "/a*"
// match the same URLs.
func normalURL(u string) string {
	if t := strings.TrimRight(u, "*"); t != u {
		return t + "*"
	}
	return u
}

// alternatives returns v and, if different, the value that covers it.
func alternatives(v, all string) []string {
	if v == all {
		return []string{v}
	}
	return []string{v, all}
}

// resourceCoverers returns the resource entries that cover r: r, "*", and
// for a subresource "a/b" also "*/b".
func resourceCoverers(r string) []string {
	out := alternatives(r, rbacv1.ResourceAll)
	if _, sub, ok := strings.Cut(r, "/"); ok && r != "*/"+sub {
		out = append(out, "*/"+sub)
	}
	return out
}

// urlCoverers returns the nonResourceURL entries that cover u: u and every
// prefix of it followed by "*".
func urlCoverers(u string) []string {
	out := []string{u}
	for i := len(u); i >= 0; i-- {
		if p := u[:i] + "*"; p != u {
			out = append(out, p)
		}
	}
	return out
}

// notCoveredBy returns the atoms of s that o does not cover, without those
// another of them covers: what s grants that o does not, each once.
func (s atomSet) notCoveredBy(o atomSet) atomSet {
	out := atomSet{}
	for a := range s {
		if !o.covers(a, false) {
			out[a] = struct{}{}
		}
	}
	return out.minimal()
}

// minimal returns s without the atoms another atom of s covers.
func (s atomSet) minimal() atomSet {
	out := make(atomSet, len(s))
	for a := range s {
		if !s.covers(a, true) {
			out[a] = struct{}{}
		}
	}
	return out
}
