package review

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// findings are everything a review found, unbounded; stored bounds them.
type findings struct {
	objects  objectFindings
	rbac     rbacFindings
	surface  surfaceFindings
	identity identityFindings
}

// growsPower reports whether the revision gives anyone power the active
// one did not: a subject gains a rule, a webhook, APIService or CRD is
// added or widened, a cluster-scoped object or Namespace is added, or the
// install identity needs a rule it did not.
func (f findings) growsPower() bool {
	return len(f.rbac.gained) > 0 || f.surface.grows() || len(f.identity.needed) > 0
}

// stored returns the bounded review, GrowsPower and Summary computed from
// every finding (not only those kept).
func (f findings) stored() *v1alpha2.RevisionReview {
	return &v1alpha2.RevisionReview{
		GrowsPower: f.growsPower(),
		Summary:    f.summary(),
		Objects:    f.objects.stored(),
		RBAC:       f.rbac.stored(),
		APISurface: f.surface.stored(),
		Identity:   f.identity.stored(),
	}
}

// perKind is how many items of each kind the summary names before "and N
// more", so that every kind of growth shows.
const perKind = 3

// summary says what grows, in order: RBAC gains, webhooks, APIServices
// and CRDs, Namespaces and other cluster-scoped objects, identity needs;
// at most perKind items of each, cut to maxSummary bytes with "and N
// more". When nothing grows it counts the objects that change.
func (f findings) summary() string {
	if !f.growsPower() {
		return fmt.Sprintf("grows no power: %d objects added, %d changed, %d removed", len(f.objects.added), len(f.objects.changed), len(f.objects.removed))
	}
	var items []string
	add := func(more string, list []string) {
		for i, it := range list {
			if i == perKind {
				items = append(items, fmt.Sprintf("and %d more %s", len(list)-i, more))
				return
			}
			items = append(items, it)
		}
	}
	var grants, surface, objects []string
	for _, g := range f.rbac.gained {
		grants = append(grants, fmt.Sprintf("grants %s %s", describeSubject(g.subject), describeRule(g.rule)))
	}
	for _, list := range [][]surfaceChange{f.surface.webhooks, f.surface.apiServices, f.surface.crds, f.surface.policies} {
		for _, c := range list {
			if c.grows() {
				surface = append(surface, describeChange(c))
			}
		}
	}
	for _, p := range f.surface.clusterScoped {
		switch gk := p.key.groupKind(); {
		case assessedElsewhere(gk):
		case gk == namespaceGK:
			objects = append(objects, "adds Namespace "+p.key.name)
		default:
			objects = append(objects, "adds cluster-scoped "+p.key.kind+" "+p.key.name)
		}
	}
	var unmodeled []string
	for _, c := range f.surface.unmodeled {
		unmodeled = append(unmodeled, describeUnmodeled(c))
	}
	add("grants", grants)
	add("webhooks, APIServices, CRDs or admission policies grown", surface)
	add("cluster-scoped objects added", objects)
	add("objects not modeled by the review added or changed", unmodeled)
	if len(f.identity.needed) > 0 {
		items = append(items, describeNeeds(f.identity.needed))
	}
	return joinBounded(items, maxSummary)
}

// describeNeeds says in one sentence what the install identity now needs:
// "the install identity now needs to manage namespaces,
// apiservices.apiregistration.k8s.io cluster-wide, secrets in namespace
// x" (to manage is every verb of permissions.Verbs).
func describeNeeds(rules []scopedRule) string {
	parts := make([]string, 0, len(rules))
	for _, r := range rules {
		var resources []string
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				if g != "" {
					res += "." + g
				}
				resources = append(resources, res)
			}
		}
		scope := " cluster-wide"
		if r.namespace != "" {
			scope = " in namespace " + r.namespace
		}
		parts = append(parts, strings.Join(resources, ", ")+scope)
	}
	return "the install identity now needs to manage " + strings.Join(parts, ", ")
}

// joinBounded joins items with "; ", keeping as many as fit in n bytes
// with a trailing "; and N more" for the rest.
func joinBounded(items []string, n int) string {
	var b strings.Builder
	for i, it := range items {
		sep := ""
		if i > 0 {
			sep = "; "
		}
		more := ""
		if rest := len(items) - i - 1; rest > 0 {
			more = fmt.Sprintf("; and %d more", rest)
		}
		if b.Len()+len(sep)+len(it)+len(more) > n {
			if i == 0 {
				return cut(it, n)
			}
			b.WriteString(fmt.Sprintf("; and %d more", len(items)-i))
			return b.String()
		}
		b.WriteString(sep + it)
	}
	return b.String()
}

// describeSubject returns "ServiceAccount NS/NAME", "User X" or "Group X".
func describeSubject(s subjectKey) string {
	if s.namespace != "" {
		return s.kind + " " + s.namespace + "/" + s.name
	}
	return s.kind + " " + s.name
}

// describeRule returns a rule as "get,list on secrets cluster-wide" or
// "create on deployments in apiGroups apps named a,b in namespace x".
func describeRule(r scopedRule) string {
	var b strings.Builder
	b.WriteString(strings.Join(r.Verbs, ","))
	if len(r.NonResourceURLs) > 0 {
		b.WriteString(" on " + strings.Join(r.NonResourceURLs, ","))
	} else {
		b.WriteString(" on " + strings.Join(r.Resources, ","))
		if !slices.Equal(r.APIGroups, []string{""}) {
			groups := slices.Clone(r.APIGroups)
			for i, g := range groups {
				if g == "" {
					groups[i] = `""`
				}
			}
			b.WriteString(" in apiGroups " + strings.Join(groups, ","))
		}
		if len(r.ResourceNames) > 0 {
			b.WriteString(" named " + strings.Join(r.ResourceNames, ","))
		}
	}
	if r.namespace == "" {
		b.WriteString(" cluster-wide")
	} else {
		b.WriteString(" in namespace " + r.namespace)
	}
	return b.String()
}

// describeChange says how a webhook, APIService or CRD grows, with its
// first detail.
func describeChange(c surfaceChange) string {
	verb := "adds"
	if c.change == v1alpha2.ReviewWidened {
		verb = "widens"
	}
	s := verb + " " + c.kind + " " + c.name
	if c.webhook != "" {
		s += " webhook " + c.webhook
	}
	if len(c.details) > 0 {
		d := c.details[0]
		if rest, ok := strings.CutPrefix(d, "matches "); ok && c.change == v1alpha2.ReviewAdded {
			return s + " matching " + rest
		}
		return s + ": " + d
	}
	return s
}
