package permissions

import (
	"context"
	"slices"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/component-helpers/auth/rbac/validation"
)

// RulesReviewer lists what the subject may do in a namespace, as the API
// server's authorizers list it: a SelfSubjectRulesReview created as the
// subject (impersonating it).
type RulesReviewer func(ctx context.Context, namespace string) (*authorizationv1.SubjectRulesReviewStatus, error)

// MissingListed is Missing with one rules review per namespace first: a
// namespaced target whose resource the listed rules grant every verb of
// Verbs (without resource names) is not reviewed verb by verb. Everything
// else — cluster-scoped targets, rules with resource names, a list an
// authorizer could not complete (status.incomplete, as a webhook
// authorizer says), a review that failed or was refused — is checked by
// Missing's SubjectAccessReviews, so the answer is the same, with one
// request per namespace instead of six per resource when the subject has
// its rules.
//
// The listed rules grant; they cannot deny. An authorizer that denies
// before RBAC is consulted is not seen here: the API server still refuses
// the write, and the revision fails as it would for any refused object.
func (c *Checker) MissingListed(ctx context.Context, subject Subject, targets []Target, rules RulesReviewer) ([]Rule, error) {
	if rules == nil {
		return c.Missing(ctx, subject, targets)
	}
	byNamespace := map[string][]Target{}
	var rest []Target
	for _, t := range targets {
		if t.Namespace == "" {
			rest = append(rest, t)
			continue
		}
		byNamespace[t.Namespace] = append(byNamespace[t.Namespace], t)
	}
	namespaces := make([]string, 0, len(byNamespace))
	for ns := range byNamespace {
		namespaces = append(namespaces, ns)
	}
	slices.Sort(namespaces)
	for _, ns := range namespaces {
		ts := byNamespace[ns]
		st, err := rules(ctx, ns)
		if err != nil || st == nil || st.Incomplete {
			rest = append(rest, ts...)
			continue
		}
		rest = append(rest, notGranted(st.ResourceRules, ts)...)
	}
	if len(rest) == 0 {
		return nil, nil
	}
	return c.Missing(ctx, subject, rest)
}

// notGranted returns the targets whose resource listed does not grant
// every verb of Verbs.
func notGranted(listed []authorizationv1.ResourceRule, targets []Target) []Target {
	owner := make([]rbacv1.PolicyRule, len(listed))
	for i, r := range listed {
		owner[i] = rbacv1.PolicyRule{Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames}
	}
	granted := map[resourceKey]bool{}
	var out []Target
	for _, t := range targets {
		k := keyOf(t)
		ok, seen := granted[k]
		if !seen {
			ok, _ = validation.Covers(owner, []rbacv1.PolicyRule{{APIGroups: []string{k.group}, Resources: []string{k.resource}, Verbs: Verbs}})
			granted[k] = ok
		}
		if !ok {
			out = append(out, t)
		}
	}
	return out
}
