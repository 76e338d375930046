package bundledeployment

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/message"
	"github.com/rukpak/rukpak/internal/metrics"
)

// versionOf is the version pinned, a revision's pinned sources, selected
// (source.Registry.SelectedVersion), cut to the schema's bound: it is
// what a tenant's repository publishes.
func (r *Reconciler) versionOf(pinned []v1alpha2.BundleSource) string {
	v, _ := message.Cut(r.Sources.SelectedVersion(pinned), maxVersionLength)
	return v
}

// knowInstalledVersion records the installed version when the resolve
// step can tell it without an install: none when no revision is active,
// the newest version when the newest revision is the active one, and,
// when it is not known (a status written before the field, or cleared by
// trustStatus) and the newest revision selects a version, the version of
// the active revision's sources: installed, the ones the resolve read for
// upgrade edges, else its Bundle's in the cache. A Bundle that cannot be
// read leaves it unknown. This runs on every reconcile: sources that
// select no version (most of them) never read the Bundle.
func (r *Reconciler) knowInstalledVersion(ctx context.Context, s *scope, installed []v1alpha2.BundleSource) {
	f := &s.facts
	switch {
	case f.active == "":
		f.installedVersion = ""
	case f.active == s.revision:
		f.installedVersion = f.newestVersion
	case f.installedVersion == "" && f.newestVersion != "":
		if installed == nil {
			installed, _ = r.activeSources(ctx, s, false)
		}
		f.installedVersion = r.versionOf(installed)
	}
}

// versionChange is the installed version before and after the newest
// revision was made active.
type versionChange struct{ from, to string }

// waitCause is why the newest version waits.
type waitCause string

// Causes of UpgradeHeld.
const (
	// notWaiting: the newest version does not wait (or none is selected).
	notWaiting waitCause = ""
	// waitsForApproval: its revision is held for approval.
	waitsForApproval waitCause = "approval"
	// waitsFailed: its revision is marked failed.
	waitsFailed waitCause = "failed"
)

// versionsSeen is what one status says of the versions the sources
// select: the installed one, the newest one, and why the newest waits.
type versionsSeen struct {
	installed, newest string
	waits             waitCause
}

// versionsWritten is what the status as last written says (the status
// the reconcile observed): the newest waits for approval when its review
// is not approved, or waits failed when a revision is marked failed.
func versionsWritten(w *v1alpha2.BundleDeploymentStatus) versionsSeen {
	if w == nil {
		return versionsSeen{}
	}
	seen := versionsSeen{installed: w.InstalledVersion, newest: w.NewestVersion}
	switch {
	case heldBefore(w) != nil:
		seen.waits = waitsForApproval
	case w.FailedBundle != "":
		seen.waits = waitsFailed
	}
	return seen
}

// versionsFound is what the reconcile s found: its facts' versions, and
// why its newest revision waits (held for approval by the gate, or marked
// failed, before or by this reconcile).
func versionsFound(s *scope) versionsSeen {
	seen := versionsSeen{installed: s.facts.installedVersion, newest: s.facts.newestVersion}
	switch {
	case s.review != nil && !s.review.Approved:
		seen.waits = waitsForApproval
	case s.revision != "" && s.facts.failed.bundle == s.revision:
		seen.waits = waitsFailed
	}
	return seen
}

// upgradeNote is one event (and count of metrics.UpgradesTotal) of a
// version followed.
type upgradeNote struct {
	// event is the metric's event label; eventType and reason the event's.
	event, eventType, reason string
	message                  string
}

// upgradeNotes decides what a reconcile announces of the versions its
// sources select, from what the status as last written says (was), what
// it found (now) and the change of the installed version its install made
// (upgraded; nil when it made the newest revision active not). Each is
// announced once, as the status records it:
//
//   - UpgradeAvailable, when the newest version is not the one written
//     before and differs from the one installed when it was found;
//   - UpgradeApplied, when the install changed the installed version;
//   - UpgradeHeld, when the newest version, not installed, waits for a
//     cause the status written before did not say for that version.
//
// Nothing is announced while no version is installed (a first install is
// no upgrade) or the sources select none. It is pure: name is the
// BundleDeployment's, for the messages.
func upgradeNotes(name string, was, now versionsSeen, upgraded *versionChange) []upgradeNote {
	var notes []upgradeNote
	// The installed version the newest was found against.
	from := now.installed
	if upgraded != nil {
		from = upgraded.from
	}
	if now.newest != "" && from != "" && now.newest != was.newest && now.newest != from {
		notes = append(notes, upgradeNote{metrics.UpgradeAvailable, corev1.EventTypeNormal, v1alpha2.ReasonUpgradeAvailable,
			fmt.Sprintf("Version %s is available; version %s is installed", now.newest, from)})
	}
	if u := upgraded; u != nil && u.from != "" && u.to != "" && u.from != u.to {
		notes = append(notes, upgradeNote{metrics.UpgradeApplied, corev1.EventTypeNormal, v1alpha2.ReasonUpgradeApplied,
			fmt.Sprintf("Version %s installed, replacing version %s", u.to, u.from)})
	}
	waits := now.waits != notWaiting && now.newest != "" && now.installed != "" && now.newest != now.installed
	if waits && (now.waits != was.waits || now.newest != was.newest) {
		n := upgradeNote{event: metrics.UpgradeHeld, reason: v1alpha2.ReasonUpgradeHeld}
		switch now.waits {
		case waitsForApproval:
			n.eventType = corev1.EventTypeNormal
			n.message = fmt.Sprintf("Version %s waits for approval (spec.upgrade.approval); version %s stays installed; see `rukpakctl approve %s`",
				now.newest, now.installed, name)
		default:
			n.eventType = corev1.EventTypeWarning
			n.message = fmt.Sprintf("Version %s failed and is not retried until the spec or the %s annotation changes; version %s stays installed",
				now.newest, v1alpha2.AnnotationRetry, now.installed)
		}
		notes = append(notes, n)
	}
	return notes
}

// announceUpgrades records the events of notes on s's BundleDeployment
// and counts them (metrics.UpgradesTotal), once the status that records
// what they say is written (finish).
func (r *Reconciler) announceUpgrades(s *scope, notes []upgradeNote) {
	for _, n := range notes {
		metrics.UpgradesTotal.WithLabelValues(metrics.Class(s.bd.Spec.ProvisionerClassName), n.event).Inc()
		r.Recorder.Eventf(s.bd, nil, n.eventType, n.reason, "Upgrade", "%s", n.message)
	}
}
