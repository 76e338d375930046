package history_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/history"
)

func TestOutcomeAndInstalledAt(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	written := metav1.NewTime(time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC))
	born := &v1alpha2.UnpackRecord{ContentDigest: "sha256:0"}
	bundle := func(unpacked *v1alpha2.UnpackRecord, status v1alpha2.BundleStatus) *v1alpha2.Bundle {
		return &v1alpha2.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "app-0123456789", CreationTimestamp: created},
			Spec: v1alpha2.BundleSpec{Unpacked: unpacked}, Status: status}
	}
	bd := func(active, lastHealthy string) *v1alpha2.BundleDeployment {
		return &v1alpha2.BundleDeployment{Status: v1alpha2.BundleDeploymentStatus{ActiveBundle: active, LastHealthyBundle: lastHealthy}}
	}
	const self, other = "app-0123456789", "app-9876543210"
	tests := []struct {
		name          string
		bd            *v1alpha2.BundleDeployment
		b             *v1alpha2.Bundle
		wantOutcome   string
		wantInstalled *metav1.Time
	}{
		{name: "born complete, active and last healthy, nothing written",
			bd: bd(self, self), b: bundle(born, v1alpha2.BundleStatus{}), wantOutcome: v1alpha2.OutcomeHealthy, wantInstalled: &created},
		{name: "born complete, active, not healthy yet",
			bd: bd(self, other), b: bundle(born, v1alpha2.BundleStatus{}), wantInstalled: &created},
		{name: "born complete, not installed",
			bd: bd(other, other), b: bundle(born, v1alpha2.BundleStatus{})},
		{name: "born complete, installed later than created",
			bd: bd(self, ""), b: bundle(born, v1alpha2.BundleStatus{InstalledAt: &written}), wantInstalled: &written},
		{name: "replaced: what was written",
			bd: bd(other, other), b: bundle(born, v1alpha2.BundleStatus{InstalledAt: &created, Outcome: v1alpha2.OutcomeHealthy}),
			wantOutcome: v1alpha2.OutcomeHealthy, wantInstalled: &created},
		{name: "a written outcome wins",
			bd: bd(self, self), b: bundle(born, v1alpha2.BundleStatus{Outcome: v1alpha2.OutcomeFailed}), wantOutcome: v1alpha2.OutcomeFailed, wantInstalled: &created},
		{name: "created before revisions were born complete: what status says",
			bd: bd(self, self), b: bundle(nil, v1alpha2.BundleStatus{InstalledAt: &written}), wantOutcome: v1alpha2.OutcomeHealthy, wantInstalled: &written},
		{name: "created before, nothing written: not installed",
			bd: bd(self, ""), b: bundle(nil, v1alpha2.BundleStatus{})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := history.Outcome(tt.bd, tt.b); got != tt.wantOutcome {
				t.Errorf("Outcome = %q, want %q", got, tt.wantOutcome)
			}
			got := history.InstalledAt(tt.bd, tt.b)
			if (got == nil) != (tt.wantInstalled == nil) || (got != nil && !got.Equal(tt.wantInstalled)) {
				t.Errorf("InstalledAt = %v, want %v", got, tt.wantInstalled)
			}
		})
	}
}
