package main

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

func TestUpgradingCount(t *testing.T) {
	for _, tc := range []struct{ bundles, want int }{
		{bundles: 1, want: 0},
		{bundles: 2, want: 1},
		{bundles: 100, want: 50},
		{bundles: 2000, want: 1000},
		{bundles: 10000, want: 1000},
	} {
		if got := upgradingCount(tc.bundles); got != tc.want {
			t.Errorf("upgradingCount(%d) = %d, want %d", tc.bundles, got, tc.want)
		}
	}
}

func TestUpgradedTo(t *testing.T) {
	cond := func(typ string, s metav1.ConditionStatus, gen int64) metav1.Condition {
		return metav1.Condition{Type: typ, Status: s, ObservedGeneration: gen}
	}
	for _, tc := range []struct {
		name  string
		gen   int64
		conds []metav1.Condition
		want  bool
	}{
		{"first spec, installed", 1, []metav1.Condition{cond(v1alpha2.TypeInstalled, metav1.ConditionTrue, 1), cond(v1alpha2.TypeProgressing, metav1.ConditionFalse, 1)}, false},
		{"new spec, old revision's conditions", 2, []metav1.Condition{cond(v1alpha2.TypeInstalled, metav1.ConditionTrue, 1), cond(v1alpha2.TypeProgressing, metav1.ConditionFalse, 1)}, false},
		{"new spec, still progressing", 2, []metav1.Condition{cond(v1alpha2.TypeInstalled, metav1.ConditionTrue, 2), cond(v1alpha2.TypeProgressing, metav1.ConditionTrue, 2)}, false},
		{"new spec, settled", 2, []metav1.Condition{cond(v1alpha2.TypeInstalled, metav1.ConditionTrue, 2), cond(v1alpha2.TypeProgressing, metav1.ConditionFalse, 2)}, true},
		{"new spec, failed", 2, []metav1.Condition{cond(v1alpha2.TypeInstalled, metav1.ConditionFalse, 2), cond(v1alpha2.TypeProgressing, metav1.ConditionFalse, 2)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bd := &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Generation: tc.gen}, Status: v1alpha2.BundleDeploymentStatus{Conditions: tc.conds}}
			if got := upgradedTo(bd); got != tc.want {
				t.Errorf("upgradedTo = %v, want %v", got, tc.want)
			}
		})
	}
}
