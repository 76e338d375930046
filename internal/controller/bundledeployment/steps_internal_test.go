package bundledeployment

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/inventory"
	"github.com/rukpak/rukpak/internal/source"
	"github.com/rukpak/rukpak/pkg/failure"
)

// TestGateVerdict: what the gate decides of a new revision under each
// approval policy, with a review that grows power or not, approved or
// not, as a first install or an upgrade.
func TestGateVerdict(t *testing.T) {
	objs := fakeRenderer{
		"r1": {configMap("cm", map[string]any{"v": "1"})},
		"r2": {configMap("cm", map[string]any{"v": "2"})},
	}
	ref := revisionRef{bundle: "r2", spec: "spec-2", digest: "content-2", upgrade: true}
	active := &appliedState{bundle: "r1", spec: "spec-1", digest: "content-1"}
	digest := approvalDigestOf(t, ref, objs["r2"])
	for _, tc := range []struct {
		name    string
		policy  v1alpha2.ApprovalPolicy
		upgrade bool
		grows   bool
		// approval is the approval digest annotated; "" for none.
		approval  string
		reviewErr error

		wantHeld     bool
		wantReviewed bool
		// wantReviewed is set when the reviewer is asked; wantReason is
		// the reason of why the revision is not applied.
		wantReason     string
		wantApprovedBy string
	}{
		{name: "Automatic first install: applied unreviewed", policy: v1alpha2.ApprovalAutomatic},
		{name: "Automatic upgrade that grows power: applied, reviewed", policy: v1alpha2.ApprovalAutomatic, upgrade: true, grows: true, wantReviewed: true},
		{name: "PowerGrowth upgrade that grows power: held", policy: v1alpha2.ApprovalPowerGrowth, upgrade: true, grows: true,
			wantHeld: true, wantReviewed: true, wantReason: v1alpha2.ReasonAwaitingApproval},
		{name: "PowerGrowth upgrade that grows power, approved: applied", policy: v1alpha2.ApprovalPowerGrowth, upgrade: true, grows: true, approval: digest,
			wantReviewed: true, wantApprovedBy: "approver"},
		{name: "PowerGrowth upgrade approved for another revision: held", policy: v1alpha2.ApprovalPowerGrowth, upgrade: true, grows: true, approval: "sha256:other",
			wantHeld: true, wantReviewed: true, wantReason: v1alpha2.ReasonAwaitingApproval},
		{name: "PowerGrowth upgrade that grows nothing: applied", policy: v1alpha2.ApprovalPowerGrowth, upgrade: true, wantReviewed: true},
		{name: "PowerGrowth first install that grows power: applied", policy: v1alpha2.ApprovalPowerGrowth, grows: true, wantReviewed: true},
		{name: "Always first install: held", policy: v1alpha2.ApprovalAlways,
			wantHeld: true, wantReviewed: true, wantReason: v1alpha2.ReasonAwaitingApproval},
		{name: "Always upgrade that grows nothing: held", policy: v1alpha2.ApprovalAlways, upgrade: true,
			wantHeld: true, wantReviewed: true, wantReason: v1alpha2.ReasonAwaitingApproval},
		{name: "Always upgrade, approved: applied", policy: v1alpha2.ApprovalAlways, upgrade: true, approval: digest,
			wantReviewed: true, wantApprovedBy: "approver"},
		{name: "Automatic upgrade that cannot be reviewed: applied unreviewed", policy: v1alpha2.ApprovalAutomatic, upgrade: true, reviewErr: errors.New("boom"), wantReviewed: true},
		{name: "Always upgrade that cannot be reviewed: held", policy: v1alpha2.ApprovalAlways, upgrade: true, reviewErr: errors.New("boom"),
			wantHeld: true, wantReviewed: true, wantReason: v1alpha2.ReasonReviewFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newStepsHarness(t, objs, v1alpha2.RevisionReview{GrowsPower: tc.grows, Summary: "grows"})
			h.reviewer.err = tc.reviewErr
			bd := testBD(tc.policy)
			if tc.approval != "" {
				approve(bd, tc.approval)
			}
			s := h.scope(bd)
			var st *appliedState
			if tc.upgrade {
				st = active
				s.facts.active = active.bundle
				s.mem.applied = active
			}
			v, err := h.r.gate(context.Background(), s, st, ref)
			if err != nil {
				t.Fatalf("gate: %v", err)
			}
			if v.held != tc.wantHeld {
				t.Errorf("held = %v, want %v", v.held, tc.wantHeld)
			}
			if got := h.reviewer.reviews > 0; got != tc.wantReviewed {
				t.Errorf("reviewed = %v, want %v", got, tc.wantReviewed)
			}
			if got := failure.Reason(s.installErr, ""); got != tc.wantReason {
				t.Errorf("not applied because %q (%v), want %q", got, s.installErr, tc.wantReason)
			}
			if tc.wantHeld {
				if v.render != nil || v.preflighted != nil {
					t.Error("a held revision's render is handed to the apply")
				}
				// The active revision, if any, is left as applied.
				if s.correct != st {
					t.Errorf("corrected revision = %v, want %v", s.correct, st)
				}
				if tc.wantReviewed && tc.reviewErr == nil && (s.review == nil || s.review.Approved) {
					t.Errorf("review = %+v, want one not approved", s.review)
				}
				return
			}
			if s.correct != nil {
				t.Errorf("corrected revision = %v while the new one is applied", s.correct)
			}
			if tc.wantReviewed && tc.reviewErr == nil {
				if s.review == nil || !s.review.Approved || s.review.ApprovedBy != tc.wantApprovedBy || s.review.Digest != digest {
					t.Errorf("review = %+v, want approved by %q, digest %s", s.review, tc.wantApprovedBy, digest)
				}
				if v.render == nil || v.render.plan == nil || v.preflighted != v.render.plan {
					t.Errorf("verdict %+v: want the render reviewed and preflighted handed to the apply", v)
				}
			} else if s.review != nil {
				t.Errorf("review = %+v of a revision not reviewed, or whose review failed", s.review)
			}
			if (tc.reviewErr != nil) != (s.unreviewed != nil) {
				t.Errorf("unreviewed = %v, want it set: %v", s.unreviewed, tc.reviewErr != nil)
			}
		})
	}
}

// deployment is a Deployment of namespace ns whose one replica is
// available, or not.
func deployment(name string, available bool) *unstructured.Unstructured {
	avail := int64(0)
	if available {
		avail = 1
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": "ns", "generation": int64(1), "resourceVersion": "7"},
		"spec":     map[string]any{"replicas": int64(1)},
		"status": map[string]any{
			"observedGeneration": int64(1), "replicas": int64(1), "updatedReplicas": int64(1),
			"readyReplicas": avail, "availableReplicas": avail,
		},
	}}
}

// TestHealthVerdict: what the health step decides of the active revision
// from what it reads of its objects: settled, rolling out, judged, or
// past its progress deadline and marked failed — never rolled back
// without a healthy revision to roll back to, nor under onFailure Hold.
func TestHealthVerdict(t *testing.T) {
	deploy := inventory.ID{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "ns", Name: "web"}
	rollingSince := func(ago time.Duration) []metav1.Condition {
		return []metav1.Condition{{Type: v1alpha2.TypeProgressing, Status: metav1.ConditionTrue, Reason: v1alpha2.ReasonRollingOut,
			LastTransitionTime: metav1.NewTime(time.Now().Add(-ago))}}
	}
	for _, tc := range []struct {
		name        string
		live        *unstructured.Unstructured
		started     bool
		lastHealthy string
		onFailure   v1alpha2.OnFailure
		conditions  []metav1.Condition

		want            rollout
		wantLastHealthy string
		wantFailed      bool
	}{
		{name: "healthy: settled, the last healthy revision", live: deployment("web", true), want: rolloutSettled, wantLastHealthy: "r1"},
		{name: "not healthy, just made active: rolling out", live: deployment("web", false), started: true, want: rolloutWaiting},
		{name: "not healthy, within the deadline: rolling out", live: deployment("web", false), conditions: rollingSince(time.Minute), want: rolloutWaiting},
		{name: "not there, within the deadline: rolling out", conditions: rollingSince(time.Minute), want: rolloutWaiting},
		{name: "not healthy, healthy before: judged, not rolled back", live: deployment("web", false), lastHealthy: "r1", want: rolloutJudged, wantLastHealthy: "r1"},
		{name: "past the deadline, nothing to roll back to: marked failed", live: deployment("web", false), conditions: rollingSince(time.Hour),
			want: rolloutFailed, wantFailed: true},
		{name: "past the deadline under onFailure Hold: marked failed, left in place", live: deployment("web", false), conditions: rollingSince(time.Hour),
			lastHealthy: "r0", onFailure: v1alpha2.OnFailureHold, want: rolloutFailed, wantLastHealthy: "r0", wantFailed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newStepsHarness(t, nil, v1alpha2.RevisionReview{})
			read := fakeHealthReader{}
			if tc.live != nil {
				read[tc.live.GetName()] = tc.live
			}
			h.r.healthReader = read
			bd := testBD(v1alpha2.ApprovalAutomatic)
			bd.Spec.Upgrade.OnFailure = tc.onFailure
			bd.Status.Conditions = tc.conditions
			s := h.scope(bd)
			st := &appliedState{bundle: "r1", ids: []inventory.ID{deploy}, objects: map[inventory.ID]appliedObject{
				deploy: {resource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, rv: "7", generation: 1},
			}}
			s.mem.applied, s.facts.active, s.facts.lastHealthy, s.rolloutStarted = st, "r1", tc.lastHealthy, tc.started
			if err := h.r.checkHealth(context.Background(), s); err != nil {
				t.Fatalf("checkHealth: %v", err)
			}
			if s.health == nil || s.health.revision != "r1" {
				t.Fatalf("health = %+v, want a verdict on r1", s.health)
			}
			if s.health.rollout != tc.want {
				t.Errorf("rollout = %v (%s), want %v", s.health.rollout, s.health.summary, tc.want)
			}
			if s.facts.lastHealthy != tc.wantLastHealthy {
				t.Errorf("last healthy = %q, want %q", s.facts.lastHealthy, tc.wantLastHealthy)
			}
			if got := s.facts.failed.bundle == "r1"; got != tc.wantFailed {
				t.Errorf("marked failed = %v, want %v", got, tc.wantFailed)
			}
			if tc.want == rolloutWaiting && (s.health.left <= 0 || s.requeueAfter == 0) {
				t.Errorf("a rollout that waits has %v left, requeued after %v", s.health.left, s.requeueAfter)
			}
			if s.rolledBack != nil || len(h.engine.applied) > 0 {
				t.Errorf("rolled back (%v), applied %v", s.rolledBack, h.engine.applied)
			}
		})
	}
}

// TestDriftDecisions: which objects of the corrected revision the drift
// step applies again — those changed or deleted since the apply, never a
// hook, a kept CRD or a finished Job that removed itself — and that a
// correction is recorded in the inventory, which keeps what it lists
// beyond the revision.
func TestDriftDecisions(t *testing.T) {
	cmRes := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	liveCM := func(name string) client.Object {
		o := configMap(name, nil)
		o.SetResourceVersion("")
		return o
	}
	names := []string{"a", "b", "job", "hook"}
	objs := fakeRenderer{"r1": {configMap("a", nil), configMap("b", nil), configMap("job", nil), configMap("hook", nil)}}
	for _, tc := range []struct {
		name string
		// live are the ConfigMaps there (the fake client sets their
		// resourceVersion to "999").
		live []string
		// rv is the resourceVersion each was applied at; "999" is as live.
		rv          map[string]string
		wantApplied []inventory.ID
	}{
		{name: "nothing changed: nothing applied", live: []string{"a", "b"}, rv: map[string]string{"a": "999", "b": "999"}},
		{name: "one changed: only it applied", live: []string{"a", "b"}, rv: map[string]string{"a": "999", "b": "1"}, wantApplied: []inventory.ID{cm("b")}},
		{name: "one deleted: applied again", live: []string{"b"}, rv: map[string]string{"a": "999", "b": "999"}, wantApplied: []inventory.ID{cm("a")}},
		{name: "never written (no resourceVersion): applied", live: []string{"a", "b"}, rv: map[string]string{"a": "999"}, wantApplied: []inventory.ID{cm("b")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var live []client.Object
			for _, n := range tc.live {
				live = append(live, liveCM(n))
			}
			h := newStepsHarness(t, objs, v1alpha2.RevisionReview{}, live...)
			s := h.scope(testBD(v1alpha2.ApprovalAutomatic))
			st := &appliedState{bundle: "r1", objects: map[inventory.ID]appliedObject{}}
			for _, n := range names {
				st.ids = append(st.ids, cm(n))
				st.objects[cm(n)] = appliedObject{resource: cmRes, rv: tc.rv[n]}
			}
			// Gone, but neither drift: a Job that ran once and removed
			// itself, and a hook.
			st.objects[cm("job")] = appliedObject{resource: cmRes, rv: "5", runOnce: true}
			st.objects[cm("hook")] = appliedObject{resource: cmRes, hook: true}
			s.mem.applied, s.facts.active = st, "r1"
			// An object the inventory has beyond the revision's (a prune
			// not done yet) stays in it.
			h.inv.ids = append(slices.Clone(st.ids), cm("old"))
			s.leaveAsApplied(st)
			if _, err := h.r.driftStep(context.Background(), s); err != nil {
				t.Fatalf("driftStep: %v", err)
			}
			var applied []inventory.ID
			for _, ids := range h.engine.applied {
				applied = append(applied, ids...)
			}
			if !slices.Equal(applied, tc.wantApplied) {
				t.Errorf("applied %v, want %v", applied, tc.wantApplied)
			}
			if got, want := len(h.inv.saved), min(1, len(tc.wantApplied)); got != want {
				t.Errorf("inventory saved %d times, want %d", got, want)
			}
			if !slices.Contains(h.inv.ids, cm("old")) {
				t.Errorf("inventory %v lost the object still to prune", h.inv.ids)
			}
			if s.installed == nil || s.installed.objects != len(names) {
				t.Errorf("installed = %+v, want the corrected revision's %d objects", s.installed, len(names))
			}
		})
	}
}

// TestUnfinishedApplyIsAppliedAgain: an upgrade whose apply wrote the new
// revision but stopped before its prune (here the prune failed; a
// cancelled turn does the same) is applied again by the next reconcile,
// which prunes what the old revision had — it is not taken for installed
// as it is, which would leave the old objects in place for good.
func TestUnfinishedApplyIsAppliedAgain(t *testing.T) {
	objs := fakeRenderer{"r1": {configMap("a", nil), configMap("b", nil)}, "r2": {configMap("b", nil), configMap("c", nil)}}
	h := newStepsHarness(t, objs, v1alpha2.RevisionReview{})
	h.inv.ids = []inventory.ID{cm("a"), cm("b")}
	h.engine.pruneErr = errors.New("connection reset")
	bd := testBD(v1alpha2.ApprovalAutomatic)
	mem := &remembered{applied: &appliedState{bundle: "r1", spec: "spec-r1", digest: "content-r1", ids: []inventory.ID{cm("a"), cm("b")}}}
	reconcile := func() (*scope, error) {
		s := h.scope(bd)
		s.mem = mem
		s.facts.active = mem.applied.bundle
		s.revision, s.specDigest, s.digest = "r2", "spec-r2", "content-r2"
		s.bundle = &v1alpha2.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "r2"}}
		_, err := h.r.install(context.Background(), s)
		return s, err
	}

	if s, err := reconcile(); err == nil && failure.Reason(s.installErr, "") != v1alpha2.ReasonPruneFailed {
		t.Fatalf("the upgrade whose prune failed: error %v, install error %v; want %s", err, s.installErr, v1alpha2.ReasonPruneFailed)
	}
	if st := mem.applied; st == nil || st.bundle != "r2" || !st.unfinished {
		t.Fatalf("applied state after the failed prune = %+v, want r2's, unfinished", st)
	}
	if s, err := reconcile(); err != nil {
		t.Fatalf("the reconcile after: %v", err)
	} else if s.correct != nil {
		t.Errorf("the unfinished revision was left as applied (corrected revision %s)", s.correct.bundle)
	}
	if want := [][]inventory.ID{{cm("a")}}; !reflect.DeepEqual(h.engine.pruned, want) {
		t.Errorf("pruned %v, want %v", h.engine.pruned, want)
	}
	if st := mem.applied; st.unfinished || !slices.Equal(h.inv.ids, []inventory.ID{cm("b"), cm("c")}) {
		t.Errorf("after it: unfinished %v, inventory %v; want finished, [b c]", st.unfinished, h.inv.ids)
	}
}

// TestInstallDecisions: what the install step decides of the newest
// revision before anything is applied — left as applied (installed
// already), marked failed, refused, or held for approval — and that in
// each case the active revision is the corrected one and nothing is
// applied.
func TestInstallDecisions(t *testing.T) {
	objs := fakeRenderer{"r1": {configMap("cm", map[string]any{"v": "1"})}, "r2": {configMap("cm", map[string]any{"v": "2"})}}
	invalidProbe := &v1alpha2.HealthChecks{Probes: []v1alpha2.Probe{{Selector: v1alpha2.ProbeSelector{Kind: "ConfigMap"}, CEL: "this is not CEL ("}}}
	for _, tc := range []struct {
		name       string
		newest     string
		policy     v1alpha2.ApprovalPolicy
		failed     bool
		probes     *v1alpha2.HealthChecks
		wantNext   bool
		wantMarked bool
		wantErrIs  string
	}{
		{name: "installed already: left as applied, the steps go on", newest: "r1", policy: v1alpha2.ApprovalAutomatic, wantNext: true},
		{name: "marked failed: not retried, the active revision left as applied", newest: "r2", policy: v1alpha2.ApprovalAutomatic, failed: true, wantMarked: true},
		{name: "a probe that does not compile: refused", newest: "r2", policy: v1alpha2.ApprovalAutomatic, probes: invalidProbe, wantErrIs: v1alpha2.ReasonInvalidConfig},
		{name: "held for approval: not applied", newest: "r2", policy: v1alpha2.ApprovalAlways, wantErrIs: v1alpha2.ReasonAwaitingApproval},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newStepsHarness(t, objs, v1alpha2.RevisionReview{})
			bd := testBD(tc.policy)
			bd.Spec.HealthChecks = tc.probes
			s := h.scope(bd)
			st := &appliedState{bundle: "r1", spec: "spec-r1", digest: "content-r1"}
			s.mem.applied, s.facts.active = st, "r1"
			s.revision, s.specDigest, s.digest = tc.newest, "spec-"+tc.newest, "content-"+tc.newest
			s.bundle = &v1alpha2.Bundle{ObjectMeta: metav1.ObjectMeta{Name: tc.newest}}
			if tc.failed {
				s.facts.failed = failedMark{bundle: tc.newest, generation: bd.Generation}
			}
			next, err := h.r.install(context.Background(), s)
			if err != nil {
				t.Fatalf("install: %v", err)
			}
			if next != tc.wantNext {
				t.Errorf("next = %v, want %v", next, tc.wantNext)
			}
			if s.markedFailed != tc.wantMarked {
				t.Errorf("marked failed = %v, want %v", s.markedFailed, tc.wantMarked)
			}
			if got := failure.Reason(s.installErr, ""); got != tc.wantErrIs {
				t.Errorf("install error %v (%q), want reason %q", s.installErr, got, tc.wantErrIs)
			}
			if s.correct != st {
				t.Errorf("corrected revision = %v, want the active one", s.correct)
			}
			if len(h.engine.applied) > 0 || s.rendered != nil || s.facts.active != "r1" {
				t.Errorf("applied %v (render %v), active %q: want nothing applied", h.engine.applied, s.rendered, s.facts.active)
			}
		})
	}
}

// TestNoteUnpublished: a lookup's versions no longer published become
// status.unpublishedVersions, with a Warning event the first time each is
// found; a lookup that finds none clears them.
func TestNoteUnpublished(t *testing.T) {
	h := newStepsHarness(t, fakeRenderer{}, v1alpha2.RevisionReview{})
	s := h.scope(testBD(v1alpha2.ApprovalAutomatic))
	gone := source.Unpublished{Source: 0, Version: "1.3.0", Newest: "1.2.0"}
	want := []v1alpha2.UnpublishedVersion{{Source: 0, Version: "1.3.0", Newest: "1.2.0"}}
	for i, step := range []struct {
		found      []source.Unpublished
		want       []v1alpha2.UnpublishedVersion
		wantEvents int
	}{
		{found: []source.Unpublished{gone}, want: want, wantEvents: 1},
		{found: []source.Unpublished{gone}, want: want},
		{},
		{found: []source.Unpublished{gone}, want: want, wantEvents: 1},
		// What a hostile index publishes is cut to the schema's bound.
		{found: []source.Unpublished{{Source: 0, Version: "1.3.0-" + strings.Repeat("x", 300), Newest: "1.2.0"}}, wantEvents: 1},
	} {
		h.r.noteUnpublished(s, step.found)
		if step.want == nil && len(step.found) > 0 {
			if u := s.facts.unpublished; len(u) != 1 || len(u[0].Version) > maxVersionLength || !strings.HasPrefix(u[0].Version, "1.3.0-x") {
				t.Errorf("step %d: unpublished %v, want the long version cut to %d bytes", i, u, maxVersionLength)
			}
		} else if !slices.Equal(s.facts.unpublished, step.want) {
			t.Errorf("step %d: unpublished %v, want %v", i, s.facts.unpublished, step.want)
		}
		events := 0
		for len(h.events.Events) > 0 {
			e := <-h.events.Events
			if !strings.Contains(e, v1alpha2.ReasonNoLongerPublished) || !strings.Contains(e, "version 1.3.0") ||
				!strings.Contains(e, "is no longer published (the newest in range is 1.2.0)") || (i < 4 && !strings.Contains(e, "version 1.3.0 is no longer published")) {
				t.Errorf("step %d: event %q", i, e)
			}
			events++
		}
		if events != step.wantEvents {
			t.Errorf("step %d: %d events, want %d", i, events, step.wantEvents)
		}
	}
}
