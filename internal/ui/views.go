package ui

import (
	"cmp"
	"fmt"
	"html/template"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/history"
	"github.com/rukpak/rukpak/internal/ownership"
	"github.com/rukpak/rukpak/internal/review"
	"github.com/rukpak/rukpak/internal/tenant"
)

// States of a BundleDeployment on the overview, in the order it lists
// them.
const (
	StateHeld        = "Held"
	StateFailed      = "Failed"
	StateProgressing = "Progressing"
	StatePaused      = "Paused"
	StateReady       = "Ready"
)

// states are the states in the overview's order.
var states = []string{StateHeld, StateFailed, StateProgressing, StatePaused, StateReady}

// glanceTypes are the conditions the overview shows per row.
var glanceTypes = []string{v1alpha2.TypeReady, v1alpha2.TypeInstalled, v1alpha2.TypeHealthy, v1alpha2.TypeProgressing}

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"lower": strings.ToLower,
	"join":  strings.Join,
	"tone":  tone,
}

// tone is how a condition of type typ with status reads: good, bad, busy
// or unknown. Progressing and Paused are good when False.
func tone(typ, status string) string {
	inverse := typ == v1alpha2.TypeProgressing || typ == v1alpha2.TypePaused
	switch {
	case status != string(metav1.ConditionTrue) && status != string(metav1.ConditionFalse):
		return "unknown"
	case (status == string(metav1.ConditionTrue)) != inverse:
		return "good"
	case typ == v1alpha2.TypeProgressing:
		return "busy"
	}
	return "bad"
}

// State is the overview's state of bd: Held when a revision awaits
// approval, Paused, Ready when Ready is True, Progressing while a
// condition says so (or nothing is observed yet), else Failed.
func State(bd *v1alpha2.BundleDeployment) string {
	installed := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled)
	ready := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeReady)
	progressing := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeProgressing)
	switch {
	case installed != nil && installed.Reason == v1alpha2.ReasonAwaitingApproval:
		return StateHeld
	case bd.Spec.Paused:
		return StatePaused
	case ready != nil && ready.Status == metav1.ConditionTrue:
		return StateReady
	case ready == nil || bd.Status.ObservedGeneration != bd.Generation,
		progressing != nil && progressing.Status == metav1.ConditionTrue,
		ready.Reason == v1alpha2.ReasonReconciling, ready.Reason == v1alpha2.ReasonInstallPending:
		return StateProgressing
	}
	return StateFailed
}

// glance is one condition at a glance.
type glance struct {
	Type, Status, Reason, Message string
}

// row is one BundleDeployment on the overview.
type row struct {
	Name, Tenant, Namespace, Class, State string
	Conditions                            []glance
	// Active is the installed revision, Newest the newest one.
	Active, Newest string
	// Message says why it is not Ready.
	Message string
}

// filters select the overview's rows; empty matches all.
type filters struct {
	State, Class, Namespace, Text string
}

// match reports whether r passes f.
func (f filters) match(r row) bool {
	text := strings.ToLower(f.Text)
	return (f.State == "" || f.State == r.State) &&
		(f.Class == "" || f.Class == r.Class) &&
		(f.Namespace == "" || f.Namespace == r.Namespace) &&
		(text == "" || strings.Contains(strings.ToLower(r.Name+" "+r.Namespace+" "+r.Class+" "+r.Message), text))
}

// newestRevisions maps each BundleDeployment's name to its newest
// revision among bundles (all the user may list).
func newestRevisions(bundles []v1alpha2.Bundle) map[string]string {
	history.Sort(bundles)
	out := map[string]string{}
	for _, b := range bundles {
		if bd := b.Labels[v1alpha2.LabelBundleDeployment]; bd != "" {
			out[bd] = b.Name
		}
	}
	return out
}

// rowOf is bd's overview row; newest is its newest revision.
func rowOf(bd *v1alpha2.BundleDeployment, newest string) row {
	r := row{Name: bd.Name, Tenant: tenant.Of(bd), Namespace: bd.Spec.InstallNamespace, Class: bd.Spec.ProvisionerClassName,
		State: State(bd), Active: bd.Status.ActiveBundle, Newest: cmp.Or(newest, bd.Status.ActiveBundle)}
	if rv := bd.Status.Review; rv != nil && !rv.Approved {
		r.Newest = rv.Revision
	}
	for _, t := range glanceTypes {
		g := glance{Type: t, Status: "Unknown"}
		if c := meta.FindStatusCondition(bd.Status.Conditions, t); c != nil {
			g.Status, g.Reason, g.Message = string(c.Status), c.Reason, c.Message
		}
		r.Conditions = append(r.Conditions, g)
		if t == v1alpha2.TypeReady && g.Status != "True" {
			r.Message = g.Message
		}
	}
	return r
}

// overviewRows are the rows of bds that pass f, held and failed first
// (states' order), then by name.
func overviewRows(bds []v1alpha2.BundleDeployment, bundles []v1alpha2.Bundle, f filters) []row {
	newest := newestRevisions(bundles)
	var rows []row
	for i := range bds {
		if r := rowOf(&bds[i], newest[bds[i].Name]); f.match(r) {
			rows = append(rows, r)
		}
	}
	slices.SortFunc(rows, func(a, b row) int {
		return cmp.Or(cmp.Compare(slices.Index(states, a.State), slices.Index(states, b.State)), strings.Compare(a.Name, b.Name))
	})
	return rows
}

// event is one entry of a BundleDeployment's timeline.
type event struct {
	At time.Time
	// When is At for people: "3m ago".
	When string
	// Kind is created, installed, healthy, failed, rolled-back, held,
	// approved or the reason of a cluster event.
	Kind     string
	Revision string
	Message  string
	// Warning marks what went wrong.
	Warning bool
}

// revision is one row of a BundleDeployment's revisions.
type revision struct {
	Number, Name, Sources, Outcome, Installed, Message string
	Markers                                            []string
}

// revisionsOf are the rows of revs (oldest first), newest first.
func revisionsOf(bd *v1alpha2.BundleDeployment, revs []v1alpha2.Bundle) []revision {
	out := make([]revision, 0, len(revs))
	for i := len(revs) - 1; i >= 0; i-- {
		b := &revs[i]
		r := revision{Name: b.Name, Sources: history.SourcesSummary(pinned(b)),
			Outcome: history.Outcome(bd, b), Message: b.Status.OutcomeMessage, Markers: history.Markers(bd, b.Name)}
		if n := ownership.RevisionNumber(b); n > 0 {
			r.Number = strconv.Itoa(n)
		}
		if at := history.InstalledAt(bd, b); at != nil {
			r.Installed = at.UTC().Format(time.RFC3339)
		}
		out = append(out, r)
	}
	return out
}

// timeline is what happened to bd, newest first: each revision created,
// installed and decided (history's outcome), the held or approved review,
// and the cluster's events about bd.
func timeline(bd *v1alpha2.BundleDeployment, revs []v1alpha2.Bundle, events []corev1.Event, now time.Time) []event {
	var out []event
	add := func(at time.Time, kind, rev, msg string, warning bool) {
		out = append(out, event{At: at, When: duration.HumanDuration(now.Sub(at)) + " ago", Kind: kind, Revision: rev, Message: msg, Warning: warning})
	}
	for i := range revs {
		b := &revs[i]
		add(b.CreationTimestamp.Time, "created", b.Name, history.SourcesSummary(pinned(b)), false)
		if at := history.InstalledAt(bd, b); at != nil {
			add(at.Time, "installed", b.Name, "", false)
		}
		switch o := history.Outcome(bd, b); o {
		case v1alpha2.OutcomeFailed, v1alpha2.OutcomeRolledBack:
			at := b.CreationTimestamp.Time
			if ia := history.InstalledAt(bd, b); ia != nil {
				at = ia.Time
			}
			add(at.Add(time.Millisecond), strings.ToLower(o), b.Name, b.Status.OutcomeMessage, true)
		}
	}
	if rv := bd.Status.Review; rv != nil {
		at := bd.CreationTimestamp.Time
		if c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled); c != nil {
			at = c.LastTransitionTime.Time
		}
		switch {
		case !rv.Approved:
			add(at, "held", rv.Revision, "awaiting approval: "+rv.Review.Summary, true)
		case rv.ApprovedBy != "":
			add(at, "approved", rv.Revision, "approved by "+rv.ApprovedBy, false)
		}
	}
	for _, e := range events {
		at := cmp.Or(e.LastTimestamp.Time, e.EventTime.Time, e.CreationTimestamp.Time)
		msg := e.Message
		if e.Count > 1 {
			msg = fmt.Sprintf("%s (%d times)", msg, e.Count)
		}
		add(at, e.Reason, "", msg, e.Type == corev1.EventTypeWarning)
	}
	// Oldest first, in the order they were added at one instant (created
	// before installed), then reversed.
	slices.SortStableFunc(out, func(a, b event) int { return a.At.Compare(b.At) })
	slices.Reverse(out)
	return out
}

// grant is one RBAC rule a subject gains or loses, for the review page.
type grant struct {
	Subject, Rule string
	Wide          bool
}

// grantsOf are gs as text; Wide marks a wildcard or a cluster-wide rule.
func grantsOf(gs []v1alpha2.ReviewGrant) []grant {
	out := make([]grant, 0, len(gs))
	for _, g := range gs {
		out = append(out, grant{Subject: review.SubjectText(g.Subject), Rule: review.RuleText(g.Rule),
			Wide: g.Rule.Namespace == "" || slices.Contains(g.Rule.Verbs, "*") || slices.Contains(g.Rule.Resources, "*")})
	}
	return out
}

// pinned are b's sources as resolved (digests, commits), else as its spec
// names them.
func pinned(b *v1alpha2.Bundle) []v1alpha2.BundleSource {
	if len(b.Status.ResolvedSources) > 0 {
		return b.Status.ResolvedSources
	}
	return b.Spec.Sources
}
