package bundledeployment

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// cond is a condition for generation gen.
func cond(typ string, st metav1.ConditionStatus, reason string, gen int64) metav1.Condition {
	return metav1.Condition{Type: typ, Status: st, Reason: reason, Message: typ + " says " + reason, ObservedGeneration: gen}
}

const (
	yes = metav1.ConditionTrue
	no  = metav1.ConditionFalse
)

// TestReadyCondition: the summary for the combinations of the other
// conditions, and what kstatus (as Flux and kubectl-style tools use it)
// makes of the BundleDeployment with it: Current only when Ready.
func TestReadyCondition(t *testing.T) {
	const gen = 3
	settled := cond(v1alpha2.TypeProgressing, no, v1alpha2.ReasonSettled, gen)
	installed := cond(v1alpha2.TypeInstalled, yes, v1alpha2.ReasonInstalled, gen)
	healthy := cond(v1alpha2.TypeHealthy, yes, v1alpha2.ReasonHealthy, gen)
	notPaused := cond(v1alpha2.TypePaused, no, v1alpha2.ReasonNotPaused, gen)
	tests := []struct {
		name        string
		conds       []metav1.Condition
		want        metav1.ConditionStatus
		wantReason  string
		wantKStatus status.Status
	}{
		{"installed, healthy, settled", []metav1.Condition{notPaused, installed, healthy, settled}, yes, v1alpha2.ReasonReady, status.CurrentStatus},
		{"nothing known yet", nil, no, v1alpha2.ReasonNotInstalled, status.InProgressStatus},
		{"paused wins over everything", []metav1.Condition{cond(v1alpha2.TypePaused, yes, v1alpha2.ReasonPaused, gen), installed, healthy, settled}, no, v1alpha2.ReasonPaused, status.InProgressStatus},
		{"newest revision failed to apply", []metav1.Condition{notPaused, cond(v1alpha2.TypeInstalled, no, v1alpha2.ReasonValidationFailed, gen), healthy, settled}, no, v1alpha2.ReasonValidationFailed, status.InProgressStatus},
		{"kind not served yet", []metav1.Condition{notPaused, cond(v1alpha2.TypeInstalled, no, v1alpha2.ReasonUnknownKind, gen)}, no, v1alpha2.ReasonUnknownKind, status.InProgressStatus},
		{"spec changed, not reconciled yet", []metav1.Condition{notPaused, cond(v1alpha2.TypeInstalled, yes, v1alpha2.ReasonInstalled, gen-1), healthy, settled}, no, v1alpha2.ReasonReconciling, status.InProgressStatus},
		{"health from an older generation", []metav1.Condition{notPaused, installed, cond(v1alpha2.TypeHealthy, yes, v1alpha2.ReasonHealthy, gen-1), settled}, no, v1alpha2.ReasonReconciling, status.InProgressStatus},
		{"installed, health not judged", []metav1.Condition{notPaused, installed}, no, v1alpha2.ReasonRollingOut, status.InProgressStatus},
		{"installed, unhealthy", []metav1.Condition{notPaused, installed, cond(v1alpha2.TypeHealthy, no, v1alpha2.ReasonUnhealthy, gen), settled}, no, v1alpha2.ReasonUnhealthy, status.InProgressStatus},
		{"rolling out", []metav1.Condition{notPaused, installed, healthy, cond(v1alpha2.TypeProgressing, yes, v1alpha2.ReasonRollingOut, gen)}, no, v1alpha2.ReasonRollingOut, status.InProgressStatus},
		{"rolled back", []metav1.Condition{notPaused, cond(v1alpha2.TypeInstalled, no, v1alpha2.ReasonRolledBack, gen), healthy, settled}, no, v1alpha2.ReasonRolledBack, status.InProgressStatus},
		{"deadline exceeded", []metav1.Condition{notPaused, installed, cond(v1alpha2.TypeHealthy, no, v1alpha2.ReasonUnhealthy, gen), cond(v1alpha2.TypeProgressing, no, v1alpha2.ReasonProgressDeadlineExceeded, gen)}, no, v1alpha2.ReasonUnhealthy, status.InProgressStatus},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := readyCondition(tt.conds, gen)
			if got.Type != v1alpha2.TypeReady || got.Status != tt.want || got.Reason != tt.wantReason || got.Message == "" {
				t.Fatalf("Ready = %s/%s %q, want %s/%s", got.Status, got.Reason, got.Message, tt.want, tt.wantReason)
			}
			// Never True next to a condition that says otherwise.
			if got.Status == yes {
				for _, c := range tt.conds {
					bad := (c.Type == v1alpha2.TypeInstalled || c.Type == v1alpha2.TypeHealthy) && c.Status != yes ||
						(c.Type == v1alpha2.TypeProgressing || c.Type == v1alpha2.TypePaused) && c.Status != no
					if bad || c.ObservedGeneration != gen {
						t.Fatalf("Ready=True next to %s=%s (generation %d)", c.Type, c.Status, c.ObservedGeneration)
					}
				}
			}
			bd := &v1alpha2.BundleDeployment{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha2.GroupVersion.String(), Kind: v1alpha2.BundleDeploymentKind},
				ObjectMeta: metav1.ObjectMeta{Name: "bd", Generation: gen}}
			bd.Status.ObservedGeneration = gen
			bd.Status.Conditions = append(append([]metav1.Condition{}, tt.conds...), got)
			obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(bd)
			if err != nil {
				t.Fatal(err)
			}
			res, err := status.Compute(&unstructured.Unstructured{Object: obj})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tt.wantKStatus {
				t.Fatalf("kstatus = %s (%s), want %s", res.Status, res.Message, tt.wantKStatus)
			}
		})
	}
}

// TestReadyNeverContradicts runs readyCondition over every combination of
// the other conditions' statuses and generations and checks the one rule
// a summary must keep: True only when every other condition agrees.
func TestReadyNeverContradicts(t *testing.T) {
	const gen = 2
	statuses := []metav1.ConditionStatus{yes, no, metav1.ConditionUnknown, ""}
	n := 0
	for _, paused := range statuses {
		for _, inst := range statuses {
			for _, heal := range statuses {
				for _, prog := range statuses {
					for stale := range 4 {
						var conds []metav1.Condition
						for i, c := range []struct {
							typ string
							st  metav1.ConditionStatus
						}{{v1alpha2.TypePaused, paused}, {v1alpha2.TypeInstalled, inst}, {v1alpha2.TypeHealthy, heal}, {v1alpha2.TypeProgressing, prog}} {
							if c.st == "" {
								continue // absent
							}
							g := int64(gen)
							if stale == i {
								g--
							}
							conds = append(conds, cond(c.typ, c.st, "R", g))
						}
						got := readyCondition(conds, gen)
						n++
						want := (paused == no || paused == "") && inst == yes && heal == yes && prog == no
						for _, c := range conds {
							want = want && c.ObservedGeneration == gen
						}
						if (got.Status == yes) != want {
							t.Fatalf("case %d: Ready = %s (%s) with %v", n, got.Status, got.Reason, conds)
						}
						if got.Reason == "" || got.Message == "" {
							t.Fatalf("case %d: Ready without a reason or message: %+v", n, got)
						}
					}
				}
			}
		}
	}
	if n != 4*4*4*4*4 {
		t.Fatalf("checked %d combinations", n)
	}
}
