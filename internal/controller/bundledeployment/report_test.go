package bundledeployment

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// What a reconcile writes to a revision's status, without a cluster: only
// what package history would not read from the Bundle's creation and the
// BundleDeployment's status.
func TestReportStatus(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	now := metav1.NewTime(time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC))
	earlier := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	const self = "app-0123456789"
	born := func(count int32) *v1alpha2.UnpackRecord {
		return &v1alpha2.UnpackRecord{ContentDigest: "sha256:0", ObjectCount: count}
	}
	installed := &bundleReport{installed: true, objects: 3}
	healthy := &bundleReport{objects: 3, decided: true, outcome: v1alpha2.OutcomeHealthy}
	failed := &bundleReport{objects: 3, decided: true, outcome: v1alpha2.OutcomeFailed, message: "why"}
	tests := []struct {
		name     string
		unpacked *v1alpha2.UnpackRecord
		status   v1alpha2.BundleStatus
		facts    revisionFacts
		want     v1alpha2.BundleStatus
	}{
		{name: "installed and healthy by the reconcile that created it: nothing",
			unpacked: born(3), facts: revisionFacts{report: &bundleReport{installed: true, objects: 3, decided: true, outcome: v1alpha2.OutcomeHealthy}, created: true, lastHealthy: self}},
		{name: "drift corrected: nothing",
			unpacked: born(3), facts: revisionFacts{report: &bundleReport{objects: 3}, lastHealthy: self}},
		{name: "healthy in a later reconcile: nothing",
			unpacked: born(3), facts: revisionFacts{report: healthy, lastHealthy: self}},
		{name: "installed by a later reconcile than the one that created it",
			unpacked: born(3), facts: revisionFacts{report: installed},
			want: v1alpha2.BundleStatus{InstalledAt: &now}},
		{name: "installed again: installedAt kept",
			unpacked: born(3), status: v1alpha2.BundleStatus{InstalledAt: &earlier}, facts: revisionFacts{report: installed},
			want: v1alpha2.BundleStatus{InstalledAt: &earlier}},
		{name: "did not render when created: the count once known",
			unpacked: born(0), facts: revisionFacts{report: &bundleReport{objects: 3}},
			want: v1alpha2.BundleStatus{ObjectCount: 3}},
		{name: "failed",
			unpacked: born(3), facts: revisionFacts{report: failed, created: true},
			want: v1alpha2.BundleStatus{Outcome: v1alpha2.OutcomeFailed, OutcomeMessage: "why"}},
		{name: "healthy after it failed: Healthy written over Failed",
			unpacked: born(3), status: v1alpha2.BundleStatus{Outcome: v1alpha2.OutcomeFailed, OutcomeMessage: "why"},
			facts: revisionFacts{report: healthy, lastHealthy: self},
			want:  v1alpha2.BundleStatus{Outcome: v1alpha2.OutcomeHealthy}},
		{name: "replaced while the last healthy one: installedAt and Healthy, once",
			unpacked: born(3), facts: revisionFacts{replaced: true, wasHealthy: true},
			want: v1alpha2.BundleStatus{InstalledAt: &created, Outcome: v1alpha2.OutcomeHealthy}},
		{name: "replaced before it became healthy: installedAt only",
			unpacked: born(3), facts: revisionFacts{replaced: true},
			want: v1alpha2.BundleStatus{InstalledAt: &created}},
		{name: "rolled back from",
			unpacked: born(3), facts: revisionFacts{report: &bundleReport{decided: true, outcome: v1alpha2.OutcomeRolledBack, message: "unhealthy"}, replaced: true},
			want: v1alpha2.BundleStatus{InstalledAt: &created, Outcome: v1alpha2.OutcomeRolledBack, OutcomeMessage: "unhealthy"}},
		{name: "replaced, installed later than created: what was written",
			unpacked: born(3), status: v1alpha2.BundleStatus{InstalledAt: &earlier}, facts: revisionFacts{replaced: true, wasHealthy: true},
			want: v1alpha2.BundleStatus{InstalledAt: &earlier, Outcome: v1alpha2.OutcomeHealthy}},
		{name: "created before revisions were born complete, installed: installedAt",
			facts: revisionFacts{report: installed, created: true},
			want:  v1alpha2.BundleStatus{InstalledAt: &now, ObjectCount: 3}},
		{name: "created before, replaced: Healthy, installedAt as it was written",
			status: v1alpha2.BundleStatus{InstalledAt: &earlier}, facts: revisionFacts{replaced: true, wasHealthy: true},
			want: v1alpha2.BundleStatus{InstalledAt: &earlier, Outcome: v1alpha2.OutcomeHealthy}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &v1alpha2.Bundle{ObjectMeta: metav1.ObjectMeta{Name: self, CreationTimestamp: created},
				Spec: v1alpha2.BundleSpec{Unpacked: tt.unpacked}, Status: tt.status}
			tt.facts.now = now
			reportStatus(b, tt.facts)
			if !equality.Semantic.DeepEqual(b.Status, tt.want) {
				t.Fatalf("status = %+v, want %+v", b.Status, tt.want)
			}
		})
	}
}
