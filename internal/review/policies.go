package review

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// The admission policy kinds, of every version the API server serves.
var (
	vapGK  = schema.GroupKind{Group: admissionregistrationv1.GroupName, Kind: "ValidatingAdmissionPolicy"}
	vapbGK = schema.GroupKind{Group: admissionregistrationv1.GroupName, Kind: "ValidatingAdmissionPolicyBinding"}
	mapGK  = schema.GroupKind{Group: admissionregistrationv1.GroupName, Kind: "MutatingAdmissionPolicy"}
	mapbGK = schema.GroupKind{Group: admissionregistrationv1.GroupName, Kind: "MutatingAdmissionPolicyBinding"}
)

// isPolicy and isBinding report whether gk is an admission policy or a
// policy binding.
func isPolicy(gk schema.GroupKind) bool  { return gk == vapGK || gk == mapGK }
func isBinding(gk schema.GroupKind) bool { return gk == vapbGK || gk == mapbGK }

// matchResources is the match part of a policy (spec.matchConstraints) or
// of a binding (spec.matchResources), of every version.
type matchResources struct {
	NamespaceSelector    *metav1.LabelSelector                    `json:"namespaceSelector"`
	ObjectSelector       *metav1.LabelSelector                    `json:"objectSelector"`
	ResourceRules        []namedRule                              `json:"resourceRules"`
	ExcludeResourceRules []namedRule                              `json:"excludeResourceRules"`
	MatchPolicy          *admissionregistrationv1.MatchPolicyType `json:"matchPolicy"`
}

// namedRule is a rule of a policy's match: operations on resources, of
// the names listed (every name when none is).
type namedRule struct {
	ResourceNames                              []string `json:"resourceNames"`
	admissionregistrationv1.RuleWithOperations `json:",inline"`
}

// policySpec is what the review reads of a policy or binding; the rest
// of its spec (validations, mutations, variables, paramKind, paramRef,
// validationActions, ...) is compared field by field.
type policySpec struct {
	Spec struct {
		// A policy's.
		MatchConstraints   *matchResources                            `json:"matchConstraints"`
		FailurePolicy      *admissionregistrationv1.FailurePolicyType `json:"failurePolicy"`
		MatchConditions    []admissionregistrationv1.MatchCondition   `json:"matchConditions"`
		ReinvocationPolicy *string                                    `json:"reinvocationPolicy"`
		// A binding's.
		PolicyName     string          `json:"policyName"`
		MatchResources *matchResources `json:"matchResources"`
	} `json:"spec"`
}

// structuredPolicyFields are the fields of a policy's or binding's spec
// compared by their meaning; every other field of the spec that changes
// widens it (what it validates or mutates, with which parameters and
// actions).
var structuredPolicyFields = []string{"matchConstraints", "failurePolicy", "matchConditions", "reinvocationPolicy", "policyName", "matchResources"}

// reviewAdmissionPolicies compares the admission policies and policy
// bindings of ps, like webhooks: added, widened (matching more, bound
// more widely, validating or mutating otherwise), changed (matching less)
// or removed.
func reviewAdmissionPolicies(ps *pairs) ([]surfaceChange, error) {
	var out []surfaceChange
	for _, p := range ps.list {
		gk := p.key.groupKind()
		if !isPolicy(gk) && !isBinding(gk) {
			continue
		}
		c := surfaceChange{kind: gk.Kind, name: p.key.name}
		switch {
		case p.after == nil:
			c.change = v1alpha2.ReviewRemoved
		case p.before == nil:
			after, err := decodePolicy(p.after)
			if err != nil {
				return nil, err
			}
			c.change, c.details = v1alpha2.ReviewAdded, describePolicy(gk, after, p.after)
		default:
			before, err := decodePolicy(p.before)
			if err != nil {
				return nil, err
			}
			after, err := decodePolicy(p.after)
			if err != nil {
				return nil, err
			}
			c.change, c.details = comparePolicies(gk, before, after, p)
		}
		if c.change != "" {
			out = append(out, c)
		}
	}
	return out, nil
}

// decodePolicy returns the structured part of a policy or binding,
// defaulted as the API server defaults it.
func decodePolicy(u *unstructured.Unstructured) (*policySpec, error) {
	var p policySpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p); err != nil {
		return nil, fmt.Errorf("decoding %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	fail, never := admissionregistrationv1.Fail, "Never"
	p.Spec.FailurePolicy = cmp.Or(p.Spec.FailurePolicy, &fail)
	p.Spec.ReinvocationPolicy = cmp.Or(p.Spec.ReinvocationPolicy, &never)
	if len(p.Spec.MatchConditions) == 0 {
		p.Spec.MatchConditions = nil
	}
	for _, m := range []*matchResources{p.Spec.MatchConstraints, p.Spec.MatchResources} {
		if m == nil {
			continue
		}
		equivalent := admissionregistrationv1.Equivalent
		m.MatchPolicy = cmp.Or(m.MatchPolicy, &equivalent)
		m.NamespaceSelector = nonEmpty(m.NamespaceSelector)
		m.ObjectSelector = nonEmpty(m.ObjectSelector)
	}
	return &p, nil
}

// matchesAll is what a binding without matchResources matches: all its
// policy matches.
var matchesAll = admissionSet{{operation: "*", group: "*", version: "*", resource: "*/*", scope: "*"}: {}}

// namedAtoms expands rules; ok is false past maxAdmissionAtoms.
func namedAtoms(rules []namedRule) (admissionSet, bool) {
	out := admissionSet{}
	for _, r := range rules {
		rule := r.RuleWithOperations
		if rule.Scope == nil {
			all := admissionregistrationv1.AllScopes
			rule.Scope = &all
		}
		atoms, ok := admissionAtoms([]admissionregistrationv1.RuleWithOperations{rule})
		if !ok {
			return out, false
		}
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for a := range atoms {
			for _, n := range names {
				if len(out) >= maxAdmissionAtoms {
					return out, false
				}
				a.name = n
				out[a] = struct{}{}
			}
		}
	}
	return out, true
}

// matched returns what m matches; a nil m (a binding without
// matchResources) matches matchesAll.
func (m *matchResources) matched() (include, exclude admissionSet, ok bool) {
	if m == nil {
		return matchesAll, admissionSet{}, true
	}
	include, okIn := namedAtoms(m.ResourceRules)
	exclude, okEx := namedAtoms(m.ExcludeResourceRules)
	return include, exclude, okIn && okEx
}

// compareMatch says how the match of a policy or binding changes: what
// it matches that it did not (wider), and what it no longer matches.
func compareMatch(old, m *matchResources) (wider, other []string) {
	oldIn, oldEx, oldOK := old.matched()
	newIn, newEx, newOK := m.matched()
	if !oldOK || !newOK {
		if !equality.Semantic.DeepEqual(old, m) {
			wider = append(wider, fmt.Sprintf("match rules change (more than %d operation × resource combinations, not compared)", maxAdmissionAtoms))
		}
		return wider, other
	}
	for _, r := range compactAdmission(newIn.notCoveredBy(oldIn)) {
		wider = append(wider, "now matches "+r)
	}
	for _, r := range compactAdmission(oldIn.notCoveredBy(newIn)) {
		other = append(other, "no longer matches "+r)
	}
	for _, r := range compactAdmission(oldEx.notCoveredBy(newEx)) {
		wider = append(wider, "no longer excludes "+r)
	}
	for _, r := range compactAdmission(newEx.notCoveredBy(oldEx)) {
		other = append(other, "now excludes "+r)
	}
	var oldNS, newNS, oldObj, newObj *metav1.LabelSelector
	oldPolicy, newPolicy := admissionregistrationv1.Equivalent, admissionregistrationv1.Equivalent
	if old != nil {
		oldNS, oldObj, oldPolicy = old.NamespaceSelector, old.ObjectSelector, *old.MatchPolicy
	}
	if m != nil {
		newNS, newObj, newPolicy = m.NamespaceSelector, m.ObjectSelector, *m.MatchPolicy
	}
	selectorChange("namespaceSelector", oldNS, newNS, &wider, &other)
	selectorChange("objectSelector", oldObj, newObj, &wider, &other)
	if oldPolicy != newPolicy {
		d := fmt.Sprintf("matchPolicy %s → %s", oldPolicy, newPolicy)
		if newPolicy == admissionregistrationv1.Equivalent {
			wider = append(wider, d)
		} else {
			other = append(other, d)
		}
	}
	return wider, other
}

// selectorChange records how a selector changes: removed or changed is
// wider (it selects others), added narrows.
func selectorChange(field string, was, is *metav1.LabelSelector, wider, other *[]string) {
	switch {
	case equality.Semantic.DeepEqual(was, is):
	case is == nil:
		*wider = append(*wider, field+" removed")
	case was == nil:
		*other = append(*other, field+" added")
	default:
		*wider = append(*wider, field+" changed")
	}
}

// comparePolicies says how a policy or binding changes: Widened when it
// matches more, is bound to another policy, or validates, mutates or acts
// otherwise (any change to its other fields); Changed when it only
// matches less; "" when it does not change.
func comparePolicies(gk schema.GroupKind, old, p *policySpec, pr *pair) (v1alpha2.ReviewChange, []string) {
	var wider, other []string
	if isPolicy(gk) {
		wider, other = compareMatch(orNothing(old.Spec.MatchConstraints), orNothing(p.Spec.MatchConstraints))
		if *old.Spec.FailurePolicy != *p.Spec.FailurePolicy {
			wider = append(wider, fmt.Sprintf("failurePolicy %s → %s", *old.Spec.FailurePolicy, *p.Spec.FailurePolicy))
		}
		if *old.Spec.ReinvocationPolicy != *p.Spec.ReinvocationPolicy {
			d := fmt.Sprintf("reinvocationPolicy %s → %s", *old.Spec.ReinvocationPolicy, *p.Spec.ReinvocationPolicy)
			if *p.Spec.ReinvocationPolicy == string(admissionregistrationv1.IfNeededReinvocationPolicy) {
				wider = append(wider, d)
			} else {
				other = append(other, d)
			}
		}
		selector := func(was, is []admissionregistrationv1.MatchCondition) {
			switch {
			case equality.Semantic.DeepEqual(was, is):
			case len(is) == 0:
				wider = append(wider, "matchConditions removed")
			case len(was) == 0:
				other = append(other, "matchConditions added")
			default:
				wider = append(wider, "matchConditions changed")
			}
		}
		selector(old.Spec.MatchConditions, p.Spec.MatchConditions)
	} else {
		wider, other = compareMatch(old.Spec.MatchResources, p.Spec.MatchResources)
		if old.Spec.PolicyName != p.Spec.PolicyName {
			wider = append(wider, fmt.Sprintf("binds policy %s instead of %s", p.Spec.PolicyName, old.Spec.PolicyName))
		}
	}
	for _, path := range changedPaths(unstructuredSpec(pr.before), unstructuredSpec(pr.after), pr.fromLive) {
		wider = append(wider, path+" changes")
	}
	switch {
	case len(wider) > 0:
		return v1alpha2.ReviewWidened, append(wider, other...)
	case len(other) > 0:
		return v1alpha2.ReviewChanged, other
	}
	return "", nil
}

// orNothing returns m, or a match of nothing for a policy without
// matchConstraints (the API server refuses one).
func orNothing(m *matchResources) *matchResources {
	if m != nil {
		return m
	}
	equivalent := admissionregistrationv1.Equivalent
	return &matchResources{MatchPolicy: &equivalent}
}

// unstructuredSpec returns u's spec without the fields compared by
// meaning, under "spec" so that paths read spec.mutations[0]....
func unstructuredSpec(u *unstructured.Unstructured) map[string]any {
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	for _, f := range structuredPolicyFields {
		delete(spec, f)
	}
	return map[string]any{"spec": spec}
}

// describePolicy says what a new policy or binding matches and does.
func describePolicy(gk schema.GroupKind, p *policySpec, u *unstructured.Unstructured) []string {
	var d []string
	m := p.Spec.MatchResources
	if isPolicy(gk) {
		m = orNothing(p.Spec.MatchConstraints)
	} else {
		d = append(d, "binds policy "+p.Spec.PolicyName)
		if m == nil {
			d = append(d, "matches everything its policy matches (no matchResources)")
		}
	}
	if m != nil {
		in, _, ok := m.matched()
		if !ok {
			d = append(d, fmt.Sprintf("matches more than %d operation × resource combinations", maxAdmissionAtoms))
		}
		for _, r := range compactAdmission(in) {
			d = append(d, "matches "+r)
		}
		if m.NamespaceSelector == nil {
			d = append(d, "in every namespace (no namespaceSelector)")
		}
	}
	if isPolicy(gk) {
		d = append(d, "failurePolicy "+string(*p.Spec.FailurePolicy))
		for _, f := range []string{"mutations", "validations"} {
			if list, found, _ := unstructured.NestedSlice(u.Object, "spec", f); found {
				d = append(d, fmt.Sprintf("%d %s", len(list), f))
			}
		}
	}
	if actions, found, _ := unstructured.NestedStringSlice(u.Object, "spec", "validationActions"); found {
		d = append(d, "validationActions "+strings.Join(slices.Sorted(slices.Values(actions)), ","))
	}
	return d
}
