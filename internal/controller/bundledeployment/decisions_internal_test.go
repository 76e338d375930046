package bundledeployment

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

func TestRolloutLeft(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	rolling := func(ago time.Duration) []metav1.Condition {
		return []metav1.Condition{{Type: v1alpha2.TypeProgressing, Status: metav1.ConditionTrue, Reason: v1alpha2.ReasonRollingOut, LastTransitionTime: metav1.NewTime(now.Add(-ago))}}
	}
	secs := int32(100)
	for _, tc := range []struct {
		name        string
		conds       []metav1.Condition
		started     bool
		deadline    *int32
		wantLeft    time.Duration
		wantRestart bool
	}{
		{name: "no Progressing condition: a new rollout", wantLeft: defaultProgressDeadline, wantRestart: true},
		{name: "made active in this reconcile: a new rollout", conds: rolling(time.Minute), started: true, wantLeft: defaultProgressDeadline, wantRestart: true},
		{name: "rolling out: the condition's clock", conds: rolling(time.Minute), wantLeft: defaultProgressDeadline - time.Minute},
		{name: "past the deadline", conds: rolling(200 * time.Second), deadline: &secs, wantLeft: -100 * time.Second},
		{name: "settled before: a new rollout", conds: []metav1.Condition{{Type: v1alpha2.TypeProgressing, Status: metav1.ConditionFalse, Reason: "Settled"}}, deadline: &secs, wantLeft: 100 * time.Second, wantRestart: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bd := &v1alpha2.BundleDeployment{}
			bd.Status.Conditions = tc.conds
			if tc.deadline != nil {
				bd.Spec.HealthChecks = &v1alpha2.HealthChecks{ProgressDeadlineSeconds: tc.deadline}
			}
			left, restart := rolloutLeft(bd, tc.started, now)
			if left != tc.wantLeft || restart != tc.wantRestart {
				t.Errorf("rolloutLeft = %v, %v; want %v, %v", left, restart, tc.wantLeft, tc.wantRestart)
			}
		})
	}
}

func TestNeedsApply(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    appliedObject
		d    driftState
		want bool
	}{
		{name: "as applied", d: asApplied},
		{name: "changed", d: changed, want: true},
		{name: "gone", a: appliedObject{rv: "1"}, d: gone, want: true},
		{name: "a Job that ran once and removed itself", a: appliedObject{rv: "1", runOnce: true}, d: gone},
		{name: "run once but never written", a: appliedObject{runOnce: true}, d: gone, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := needsApply(tc.a, tc.d); got != tc.want {
				t.Errorf("needsApply = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestInstalledEvent(t *testing.T) {
	for _, tc := range []struct {
		name           string
		active, bundle string
		res            installResult
		want           bool
	}{
		{name: "first install", bundle: "b-1", res: installResult{objects: 10, created: 10}, want: false},
		{name: "first install retried after a failure", bundle: "b-1", res: installResult{objects: 10, configured: 3, unchanged: 7}, want: false},
		{name: "upgrade", active: "b-1", bundle: "b-2", res: installResult{objects: 10, configured: 1, unchanged: 9}, want: true},
		{name: "upgrade that changes nothing", active: "b-1", bundle: "b-2", res: installResult{objects: 10, unchanged: 10}, want: true},
		{name: "active revision applied again with changes", active: "b-1", bundle: "b-1", res: installResult{objects: 10, created: 1, unchanged: 9}, want: true},
		{name: "active revision applied again, a prune", active: "b-1", bundle: "b-1", res: installResult{objects: 9, unchanged: 9, deleted: 1}, want: true},
		{name: "active revision verified after a restart", active: "b-1", bundle: "b-1", res: installResult{objects: 10, unchanged: 10}, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := installedEvent(tc.active, tc.bundle, &tc.res); got != tc.want {
				t.Errorf("installedEvent(%q, %q, %+v) = %v, want %v", tc.active, tc.bundle, tc.res, got, tc.want)
			}
		})
	}
}
