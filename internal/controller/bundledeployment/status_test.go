package bundledeployment

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// want is one condition computeStatus must leave: its status, reason and
// a part of its message ("" checks none).
type want struct {
	status  metav1.ConditionStatus
	reason  string
	message string
}

// The whole status from what one reconcile found, without a cluster.
func TestComputeStatus(t *testing.T) {
	settled := metav1.Condition{Type: v1alpha2.TypeProgressing, Status: metav1.ConditionFalse, Reason: v1alpha2.ReasonSettled,
		Message: "revision r1 is installed and healthy", LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour))}
	rollingOut := metav1.Condition{Type: v1alpha2.TypeProgressing, Status: metav1.ConditionTrue, Reason: v1alpha2.ReasonRollingOut,
		Message: "revision r2 rolling out", LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Minute))}
	installed := &installResult{objects: 3}
	tests := []struct {
		name   string
		paused bool
		// noActive: no revision is installed yet (else r1 is).
		noActive bool
		// before are the conditions the status had.
		before []metav1.Condition
		scope  scope
		want   map[string]want
		// absent are condition types that must not be set.
		absent []string
		// clockKept: Progressing keeps the lastTransitionTime it had.
		clockKept bool
		// unpublished are the status's unpublishedVersions.
		unpublished []v1alpha2.UnpublishedVersion
	}{
		{
			name:        "a version no longer published: still unpacked, and said so",
			unpublished: []v1alpha2.UnpublishedVersion{{Source: 0, Version: "4.11.2", Newest: "4.11.1"}},
			scope:       scope{revision: "r1", digest: "sha256:1", installed: installed, health: &healthFacts{revision: "r1", relevant: 2, rollout: rolloutSettled}},
			want: map[string]want{
				v1alpha2.TypeUnpacked: {metav1.ConditionTrue, v1alpha2.ReasonNoLongerPublished,
					"revision r1 unpacked, content sha256:1; source 0: version 4.11.2 is no longer published (the newest in range is 4.11.1), and stays selected"},
				v1alpha2.TypeReady: {metav1.ConditionTrue, v1alpha2.ReasonReady, ""},
			},
		},
		{
			name:  "installed and healthy is ready",
			scope: scope{revision: "r1", digest: "sha256:1", installed: installed, health: &healthFacts{revision: "r1", relevant: 2, rollout: rolloutSettled}},
			want: map[string]want{
				v1alpha2.TypeUnpacked:    {metav1.ConditionTrue, v1alpha2.ReasonUnpacked, "revision r1 unpacked"},
				v1alpha2.TypeInstalled:   {metav1.ConditionTrue, v1alpha2.ReasonInstalled, "3 objects"},
				v1alpha2.TypeHealthy:     {metav1.ConditionTrue, v1alpha2.ReasonHealthy, "2 object(s) checked, all healthy"},
				v1alpha2.TypeProgressing: {metav1.ConditionFalse, v1alpha2.ReasonSettled, "installed and healthy"},
				v1alpha2.TypeReady:       {metav1.ConditionTrue, v1alpha2.ReasonReady, ""},
				v1alpha2.TypePaused:      {metav1.ConditionFalse, v1alpha2.ReasonNotPaused, ""},
			},
		},
		{
			name:  "nothing to check is healthy",
			scope: scope{installed: installed, health: &healthFacts{revision: "r1", rollout: rolloutSettled}},
			want: map[string]want{
				v1alpha2.TypeHealthy: {metav1.ConditionTrue, v1alpha2.ReasonHealthy, "no object needs a health check"},
				v1alpha2.TypeReady:   {metav1.ConditionTrue, v1alpha2.ReasonReady, ""},
			},
		},
		{
			name:   "a new rollout starts its clock",
			before: []metav1.Condition{settled},
			scope: scope{installed: installed, health: &healthFacts{revision: "r2", relevant: 1, summary: "Deployment a: 0/1 available",
				rollout: rolloutWaiting, restart: true, left: 90 * time.Second}},
			want: map[string]want{
				v1alpha2.TypeHealthy:     {metav1.ConditionFalse, v1alpha2.ReasonUnhealthy, "revision r2: Deployment a: 0/1 available"},
				v1alpha2.TypeProgressing: {metav1.ConditionTrue, v1alpha2.ReasonRollingOut, "revision r2 rolling out, 1m30s left"},
				v1alpha2.TypeReady:       {metav1.ConditionFalse, v1alpha2.ReasonUnhealthy, ""},
			},
		},
		{
			name:   "a rollout under way keeps its clock",
			before: []metav1.Condition{rollingOut},
			scope: scope{installed: installed, health: &healthFacts{revision: "r2", relevant: 1, summary: "Deployment a: 0/1 available",
				rollout: rolloutWaiting, left: time.Minute}},
			want: map[string]want{
				v1alpha2.TypeProgressing: {metav1.ConditionTrue, v1alpha2.ReasonRollingOut, "1m0s left"},
			},
			clockKept: true,
		},
		{
			name:   "a missed deadline says why",
			before: []metav1.Condition{rollingOut},
			scope: scope{installed: installed, health: &healthFacts{revision: "r2", relevant: 1, summary: "Deployment a: 0/1 available",
				rollout: rolloutFailed, why: "revision r2 was not healthy within 1m0s: Deployment a: 0/1 available"}},
			want: map[string]want{
				v1alpha2.TypeProgressing: {metav1.ConditionFalse, v1alpha2.ReasonProgressDeadlineExceeded, "not healthy within 1m0s"},
				v1alpha2.TypeReady:       {metav1.ConditionFalse, v1alpha2.ReasonUnhealthy, ""},
			},
		},
		{
			name:   "settled but no longer healthy says so",
			before: []metav1.Condition{settled},
			scope:  scope{installed: installed, health: &healthFacts{revision: "r1", relevant: 1, summary: "Deployment a: 0/1 available", rollout: rolloutJudged}},
			want: map[string]want{
				v1alpha2.TypeHealthy:     {metav1.ConditionFalse, v1alpha2.ReasonUnhealthy, ""},
				v1alpha2.TypeProgressing: {metav1.ConditionFalse, v1alpha2.ReasonSettled, "it was healthy and is not now"},
			},
			clockKept: true,
		},
		{
			name:   "a failed revision judged again keeps its Progressing",
			before: []metav1.Condition{{Type: v1alpha2.TypeProgressing, Status: metav1.ConditionFalse, Reason: v1alpha2.ReasonProgressDeadlineExceeded, Message: "not healthy within 1m0s"}},
			scope:  scope{installed: installed, health: &healthFacts{revision: "r2", relevant: 1, summary: "Deployment a: 0/1 available", rollout: rolloutJudged}},
			want: map[string]want{
				v1alpha2.TypeProgressing: {metav1.ConditionFalse, v1alpha2.ReasonProgressDeadlineExceeded, "not healthy within 1m0s"},
			},
			clockKept: true,
		},
		{
			name:   "invalid probes give no verdict on the rollout",
			before: []metav1.Condition{rollingOut},
			scope:  scope{installed: installed, health: &healthFacts{revision: "r2", invalid: failure.New(v1alpha2.ReasonInvalidConfig, "probe 0: bad CEL")}},
			want: map[string]want{
				v1alpha2.TypeHealthy:     {metav1.ConditionFalse, v1alpha2.ReasonInvalidConfig, "probe 0: bad CEL"},
				v1alpha2.TypeProgressing: {metav1.ConditionTrue, v1alpha2.ReasonRollingOut, "revision r2 rolling out"},
			},
			clockKept: true,
		},
		{
			name:     "no health verdict leaves Healthy and Progressing unset",
			noActive: true,
			scope:    scope{revision: "r1", unpackErr: failure.New(v1alpha2.ReasonUnpackFailed, "tag not found")},
			want: map[string]want{
				v1alpha2.TypeUnpacked:  {metav1.ConditionFalse, v1alpha2.ReasonUnpackFailed, "tag not found"},
				v1alpha2.TypeInstalled: {metav1.ConditionFalse, v1alpha2.ReasonInstallPending, "waiting for revision r1 to unpack"},
				v1alpha2.TypeReady:     {metav1.ConditionFalse, v1alpha2.ReasonInstallPending, ""},
			},
			absent: []string{v1alpha2.TypeHealthy, v1alpha2.TypeProgressing},
		},
		{
			name:  "a failed install names the revision that stays",
			scope: scope{revision: "r2", installErr: failure.New(v1alpha2.ReasonCollision, "object x is another's")},
			want: map[string]want{
				v1alpha2.TypeInstalled: {metav1.ConditionFalse, v1alpha2.ReasonCollision, "revision r2: object x is another's; revision r1 remains installed"},
			},
		},
		{
			name:  "a rollback is reported as Installed=False",
			scope: scope{installed: installed, rolledBack: failure.New(v1alpha2.ReasonRolledBack, "rolled back to revision r1"), health: &healthFacts{revision: "r2", relevant: 1, summary: "x", rollout: rolloutFailed, why: "missed"}},
			want: map[string]want{
				v1alpha2.TypeInstalled: {metav1.ConditionFalse, v1alpha2.ReasonRolledBack, "rolled back to revision r1"},
				v1alpha2.TypeReady:     {metav1.ConditionFalse, v1alpha2.ReasonRolledBack, ""},
			},
		},
		{
			name:   "paused changes nothing but Paused and Ready",
			paused: true,
			before: []metav1.Condition{settled},
			scope:  scope{installErr: errors.New("ignored while paused"), health: &healthFacts{revision: "r1", invalid: errors.New("ignored")}},
			want: map[string]want{
				v1alpha2.TypePaused:      {metav1.ConditionTrue, v1alpha2.ReasonPaused, ""},
				v1alpha2.TypeProgressing: {metav1.ConditionFalse, v1alpha2.ReasonSettled, "installed and healthy"},
				v1alpha2.TypeReady:       {metav1.ConditionFalse, v1alpha2.ReasonPaused, ""},
			},
			absent:    []string{v1alpha2.TypeInstalled, v1alpha2.TypeHealthy},
			clockKept: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bd := &v1alpha2.BundleDeployment{}
			bd.Generation = 2
			bd.Spec.Paused = tt.paused
			if !tt.noActive {
				bd.Status.ActiveBundle = "r1"
			}
			for _, c := range tt.before {
				c.ObservedGeneration = 2
				bd.Status.Conditions = append(bd.Status.Conditions, c)
			}
			bd.Status.UnpublishedVersions = tt.unpublished
			s := tt.scope
			s.bd = bd
			s.facts = observe(&bd.Status, nil)
			computeStatus(bd, &s)
			if !slices.Equal(bd.Status.UnpublishedVersions, tt.unpublished) {
				t.Errorf("unpublishedVersions = %v, want %v", bd.Status.UnpublishedVersions, tt.unpublished)
			}
			if bd.Status.ObservedGeneration != 2 {
				t.Errorf("observedGeneration = %d, want 2", bd.Status.ObservedGeneration)
			}
			for typ, w := range tt.want {
				c := meta.FindStatusCondition(bd.Status.Conditions, typ)
				if c == nil {
					t.Errorf("%s: not set", typ)
					continue
				}
				if c.Status != w.status || c.Reason != w.reason || !strings.Contains(c.Message, w.message) {
					t.Errorf("%s = %s %s %q, want %s %s containing %q", typ, c.Status, c.Reason, c.Message, w.status, w.reason, w.message)
				}
				if c.ObservedGeneration != 2 {
					t.Errorf("%s: observedGeneration %d, want 2", typ, c.ObservedGeneration)
				}
			}
			for _, typ := range tt.absent {
				if c := meta.FindStatusCondition(bd.Status.Conditions, typ); c != nil {
					t.Errorf("%s set (%s %s), want none", typ, c.Status, c.Reason)
				}
			}
			if p := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeProgressing); p != nil && len(tt.before) > 0 {
				kept := p.LastTransitionTime.Equal(&tt.before[0].LastTransitionTime)
				if kept != tt.clockKept {
					t.Errorf("Progressing lastTransitionTime kept = %v, want %v (%s, before %s)", kept, tt.clockKept, p.LastTransitionTime, tt.before[0].LastTransitionTime)
				}
			}
		})
	}
}
