package history

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// Outcome returns what became of revision b of bd: b's status.outcome when
// written, else Healthy when bd's status names it the last healthy
// revision, else "" (undecided).
func Outcome(bd *v1alpha2.BundleDeployment, b *v1alpha2.Bundle) string {
	if b.Status.Outcome != "" {
		return b.Status.Outcome
	}
	if ImpliedHealthy(bd.Status.LastHealthyBundle, b) {
		return v1alpha2.OutcomeHealthy
	}
	return ""
}

// InstalledAt returns when revision b of bd was first installed: b's
// status.installedAt when written, else b's creation time when b was born
// complete and is bd's active revision (installed by the reconcile that
// created it), else nil (not installed, or not known).
func InstalledAt(bd *v1alpha2.BundleDeployment, b *v1alpha2.Bundle) *metav1.Time {
	if b.Status.InstalledAt != nil {
		return b.Status.InstalledAt
	}
	if ImpliedInstalled(bd.Status.ActiveBundle, b) {
		t := b.CreationTimestamp
		return &t
	}
	return nil
}

// ImpliedHealthy reports whether b's outcome reads as Healthy without
// being written, while lastHealthy is its BundleDeployment's
// status.lastHealthyBundle.
func ImpliedHealthy(lastHealthy string, b *v1alpha2.Bundle) bool {
	return lastHealthy != "" && lastHealthy == b.Name
}

// ImpliedInstalled reports whether b reads as installed at its creation
// time without installedAt being written, while active is its
// BundleDeployment's status.activeBundle.
func ImpliedInstalled(active string, b *v1alpha2.Bundle) bool {
	return active != "" && active == b.Name && b.Spec.Unpacked != nil
}
