package review

import (
	"cmp"
	"fmt"
	"net/url"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// The webhook configuration kinds.
var (
	mutatingGK   = schema.GroupKind{Group: admissionregistrationv1.GroupName, Kind: "MutatingWebhookConfiguration"}
	validatingGK = schema.GroupKind{Group: admissionregistrationv1.GroupName, Kind: "ValidatingWebhookConfiguration"}
)

// webhookConfig is the part of a webhook configuration of either kind that
// the review compares.
type webhookConfig struct {
	Webhooks []webhook `json:"webhooks"`
}

// webhook is one webhook of a configuration (the fields of
// MutatingWebhook and ValidatingWebhook the review compares).
type webhook struct {
	Name               string                                          `json:"name"`
	ClientConfig       admissionregistrationv1.WebhookClientConfig     `json:"clientConfig"`
	Rules              []admissionregistrationv1.RuleWithOperations    `json:"rules"`
	FailurePolicy      *admissionregistrationv1.FailurePolicyType      `json:"failurePolicy"`
	MatchPolicy        *admissionregistrationv1.MatchPolicyType        `json:"matchPolicy"`
	NamespaceSelector  *metav1.LabelSelector                           `json:"namespaceSelector"`
	ObjectSelector     *metav1.LabelSelector                           `json:"objectSelector"`
	MatchConditions    []admissionregistrationv1.MatchCondition        `json:"matchConditions"`
	ReinvocationPolicy *admissionregistrationv1.ReinvocationPolicyType `json:"reinvocationPolicy"`
}

// surfaceChange is one webhook, APIService or CRD a revision changes.
type surfaceChange struct {
	kind, name, webhook string
	change              v1alpha2.ReviewChange
	details             []string
}

// grows reports whether c grows power.
func (c surfaceChange) grows() bool {
	return c.change == v1alpha2.ReviewAdded || c.change == v1alpha2.ReviewWidened
}

// reviewWebhooks compares every webhook of the webhook configurations of
// ps, by configuration and webhook name.
func reviewWebhooks(ps *pairs) ([]surfaceChange, error) {
	var out []surfaceChange
	for _, p := range ps.list {
		gk := p.key.groupKind()
		if gk != mutatingGK && gk != validatingGK {
			continue
		}
		before, err := decodeWebhooks(p.before)
		if err != nil {
			return nil, err
		}
		after, err := decodeWebhooks(p.after)
		if err != nil {
			return nil, err
		}
		was := map[string]*webhook{}
		for i := range before {
			was[before[i].Name] = &before[i]
		}
		is := map[string]bool{}
		for i := range after {
			w := &after[i]
			is[w.Name] = true
			c := surfaceChange{kind: gk.Kind, name: p.key.name, webhook: w.Name}
			if old, ok := was[w.Name]; ok {
				c.change, c.details = compareWebhooks(old, w)
			} else {
				c.change, c.details = v1alpha2.ReviewAdded, describeWebhook(w)
			}
			if c.change != "" {
				out = append(out, c)
			}
		}
		for _, w := range before {
			if !is[w.Name] {
				out = append(out, surfaceChange{kind: gk.Kind, name: p.key.name, webhook: w.Name, change: v1alpha2.ReviewRemoved})
			}
		}
	}
	return out, nil
}

// decodeWebhooks returns the webhooks of u, defaulted as the API server
// defaults them; none for nil.
func decodeWebhooks(u *unstructured.Unstructured) ([]webhook, error) {
	if u == nil {
		return nil, nil
	}
	var c webhookConfig
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &c); err != nil {
		return nil, fmt.Errorf("decoding %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	for i := range c.Webhooks {
		defaultWebhook(&c.Webhooks[i])
	}
	return c.Webhooks, nil
}

// defaultWebhook sets what the API server defaults, so that a rendered
// webhook and a live one compare equal: failurePolicy Fail, matchPolicy
// Equivalent, reinvocationPolicy Never, scope "*", service port 443, and
// an empty selector as none. The caBundle is dropped: the manager injects
// it.
func defaultWebhook(w *webhook) {
	fail, equivalent, never := admissionregistrationv1.Fail, admissionregistrationv1.Equivalent, admissionregistrationv1.NeverReinvocationPolicy
	w.FailurePolicy = cmp.Or(w.FailurePolicy, &fail)
	w.MatchPolicy = cmp.Or(w.MatchPolicy, &equivalent)
	w.ReinvocationPolicy = cmp.Or(w.ReinvocationPolicy, &never)
	w.ClientConfig.CABundle = nil
	if s := w.ClientConfig.Service; s != nil && s.Port == nil {
		port := int32(443)
		s.Port = &port
	}
	if len(w.MatchConditions) == 0 {
		w.MatchConditions = nil
	}
	w.NamespaceSelector = nonEmpty(w.NamespaceSelector)
	w.ObjectSelector = nonEmpty(w.ObjectSelector)
	for i := range w.Rules {
		if w.Rules[i].Scope == nil {
			all := admissionregistrationv1.AllScopes
			w.Rules[i].Scope = &all
		}
	}
}

// nonEmpty returns s, or nil when it selects everything.
func nonEmpty(s *metav1.LabelSelector) *metav1.LabelSelector {
	if s == nil || (len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0) {
		return nil
	}
	return s
}

// describeWebhook says what a new webhook matches and calls.
func describeWebhook(w *webhook) []string {
	var d []string
	atoms, ok := admissionAtoms(w.Rules)
	if !ok {
		d = append(d, fmt.Sprintf("matches more than %d operation × resource combinations", maxAdmissionAtoms))
	}
	for _, r := range compactAdmission(atoms) {
		d = append(d, "matches "+r)
	}
	d = append(d, "failurePolicy "+string(*w.FailurePolicy))
	if w.NamespaceSelector == nil {
		d = append(d, "in every namespace (no namespaceSelector)")
	}
	if w.ObjectSelector == nil {
		d = append(d, "for every object (no objectSelector)")
	}
	return append(d, "calls "+endpoint(w.ClientConfig))
}

// compareWebhooks says how a webhook changes: Widened when it matches or
// reaches more, Changed when it changes otherwise, "" when it does not.
func compareWebhooks(old, w *webhook) (v1alpha2.ReviewChange, []string) {
	var wider, other []string
	oldAtoms, oldOK := admissionAtoms(old.Rules)
	newAtoms, newOK := admissionAtoms(w.Rules)
	switch {
	case !oldOK || !newOK:
		// Too many to compare: any change counts as wider.
		if !equality.Semantic.DeepEqual(old.Rules, w.Rules) {
			wider = append(wider, fmt.Sprintf("rules change (more than %d operation × resource combinations, not compared)", maxAdmissionAtoms))
		}
	default:
		for _, r := range compactAdmission(newAtoms.notCoveredBy(oldAtoms)) {
			wider = append(wider, "now matches "+r)
		}
		for _, r := range compactAdmission(oldAtoms.notCoveredBy(newAtoms)) {
			other = append(other, "no longer matches "+r)
		}
	}
	if *old.FailurePolicy != *w.FailurePolicy {
		wider = append(wider, fmt.Sprintf("failurePolicy %s → %s", *old.FailurePolicy, *w.FailurePolicy))
	}
	if *old.MatchPolicy != *w.MatchPolicy {
		d := fmt.Sprintf("matchPolicy %s → %s", *old.MatchPolicy, *w.MatchPolicy)
		if *w.MatchPolicy == admissionregistrationv1.Equivalent {
			wider = append(wider, d)
		} else {
			other = append(other, d)
		}
	}
	if *old.ReinvocationPolicy != *w.ReinvocationPolicy {
		d := fmt.Sprintf("reinvocationPolicy %s → %s", *old.ReinvocationPolicy, *w.ReinvocationPolicy)
		if *w.ReinvocationPolicy == admissionregistrationv1.IfNeededReinvocationPolicy {
			wider = append(wider, d)
		} else {
			other = append(other, d)
		}
	}
	selector := func(field string, was, is any, wasNone, isNone bool) {
		switch {
		case equality.Semantic.DeepEqual(was, is):
		case isNone:
			wider = append(wider, field+" removed")
		case wasNone:
			other = append(other, field+" added")
		default:
			wider = append(wider, field+" changed")
		}
	}
	selector("namespaceSelector", old.NamespaceSelector, w.NamespaceSelector, old.NamespaceSelector == nil, w.NamespaceSelector == nil)
	selector("objectSelector", old.ObjectSelector, w.ObjectSelector, old.ObjectSelector == nil, w.ObjectSelector == nil)
	selector("matchConditions", old.MatchConditions, w.MatchConditions, len(old.MatchConditions) == 0, len(w.MatchConditions) == 0)
	if !equality.Semantic.DeepEqual(old.ClientConfig, w.ClientConfig) {
		wider = append(wider, fmt.Sprintf("calls %s instead of %s", endpoint(w.ClientConfig), endpoint(old.ClientConfig)))
	}
	switch {
	case len(wider) > 0:
		return v1alpha2.ReviewWidened, append(wider, other...)
	case len(other) > 0:
		return v1alpha2.ReviewChanged, other
	}
	return "", nil
}

// endpoint says what a webhook calls: "service NS/NAME:PORT/PATH" or
// "URL X".
func endpoint(c admissionregistrationv1.WebhookClientConfig) string {
	if s := c.Service; s != nil {
		out := fmt.Sprintf("service %s/%s", s.Namespace, s.Name)
		if s.Port != nil {
			out += fmt.Sprintf(":%d", *s.Port)
		}
		if s.Path != nil {
			out += *s.Path
		}
		return out
	}
	if c.URL != nil {
		return "URL " + withoutUserInfo(*c.URL)
	}
	return "nothing"
}

// withoutUserInfo returns u without a user or password, should it have
// one (the API server refuses it, but a rendered object is not yet
// validated).
func withoutUserInfo(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable)"
	}
	p.User = nil
	return p.String()
}
