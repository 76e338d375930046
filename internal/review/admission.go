package review

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// admissionAtom is the smallest thing an admission rule matches: one
// operation on one resource of one group and version in one scope, with
// wildcards kept as written, of one name (an admission policy's
// resourceNames) or of every name ("").
type admissionAtom struct {
	operation, group, version, resource, scope, name string
}

// admissionSet is a set of admission atoms.
type admissionSet map[admissionAtom]struct{}

// maxAdmissionAtoms is how many atoms a webhook's rules may expand to for
// the review to compare them atom by atom (which takes time quadratic in
// their number).
const maxAdmissionAtoms = 4096

// admissionAtoms expands rules (already defaulted: every rule has a
// scope); ok is false, and the set partial, past maxAdmissionAtoms.
func admissionAtoms(rules []admissionregistrationv1.RuleWithOperations) (s admissionSet, ok bool) {
	s = admissionSet{}
	for _, r := range rules {
		scope := string(admissionregistrationv1.AllScopes)
		if r.Scope != nil {
			scope = string(*r.Scope)
		}
		for _, op := range r.Operations {
			for _, g := range r.APIGroups {
				for _, v := range r.APIVersions {
					for _, res := range r.Resources {
						if len(s) >= maxAdmissionAtoms {
							return s, false
						}
						s[admissionAtom{operation: string(op), group: g, version: v, resource: res, scope: scope}] = struct{}{}
					}
				}
			}
		}
	}
	return s, true
}

// covers reports whether b matches everything a does.
func (b admissionAtom) covers(a admissionAtom) bool {
	return wildcard(b.operation, a.operation) && wildcard(b.group, a.group) &&
		wildcard(b.version, a.version) && wildcard(b.scope, a.scope) &&
		(b.name == "" || b.name == a.name) &&
		admissionResourceCovers(b.resource, a.resource)
}

// wildcard reports whether rule value b matches a: equal, or "*".
func wildcard(b, a string) bool { return b == a || b == "*" }

// admissionResourceCovers reports whether admission rule resource b
// matches everything a does: "*/*" every resource and subresource, "*"
// every resource but no subresource, "r/*" every subresource of r, "*/s"
// subresource s of every resource.
func admissionResourceCovers(b, a string) bool {
	if b == a || b == "*/*" {
		return true
	}
	aRes, aSub, aHasSub := strings.Cut(a, "/")
	bRes, bSub, bHasSub := strings.Cut(b, "/")
	switch {
	case b == "*":
		return !aHasSub
	case !bHasSub || !aHasSub:
		return false
	case bSub == "*":
		return bRes == aRes
	case bRes == "*":
		return bSub == aSub
	}
	return false
}

// notCoveredBy returns the atoms of s no atom of o covers, without those
// another of them covers.
func (s admissionSet) notCoveredBy(o admissionSet) admissionSet {
	out := admissionSet{}
	for a := range s {
		if !o.coversAtom(a, false) {
			out[a] = struct{}{}
		}
	}
	minimal := admissionSet{}
	for a := range out {
		if !out.coversAtom(a, true) {
			minimal[a] = struct{}{}
		}
	}
	return minimal
}

// coversAtom reports whether an atom of s (other than a, with skipSelf)
// covers a.
func (s admissionSet) coversAtom(a admissionAtom, skipSelf bool) bool {
	for b := range s {
		if skipSelf && b == a {
			continue
		}
		if b.covers(a) {
			return true
		}
	}
	return false
}

// compactAdmission merges atoms into sentences such as "CREATE,UPDATE of
// deployments,replicasets (apps/v1)", one per group, version and scope
// and set of operations, sorted.
func compactAdmission(s admissionSet) []string {
	type resourceKey struct{ group, version, resource, scope, name string }
	ops := map[resourceKey][]string{}
	for a := range s {
		k := resourceKey{a.group, a.version, a.resource, a.scope, a.name}
		ops[k] = append(ops[k], a.operation)
	}
	type ruleKey struct{ group, version, scope, ops, name string }
	resources := map[ruleKey][]string{}
	for k, o := range ops {
		r := ruleKey{k.group, k.version, k.scope, strings.Join(sortedSet(o), ","), k.name}
		resources[r] = append(resources[r], k.resource)
	}
	out := make([]string, 0, len(resources))
	for k, rs := range resources {
		gv := k.version
		if k.group != "" {
			gv = k.group + "/" + k.version
		}
		s := fmt.Sprintf("%s of %s (%s)", k.ops, strings.Join(sortedSet(rs), ","), gv)
		if k.scope != string(admissionregistrationv1.AllScopes) {
			s += ", " + k.scope + " scope only"
		}
		if k.name != "" {
			s += ", named " + k.name
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// sortedSet returns ss sorted without duplicates.
func sortedSet(ss []string) []string {
	ss = slices.Clone(ss)
	slices.Sort(ss)
	return slices.Compact(ss)
}
