package bundledeployment

import (
	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// verdict is what a failed install of a revision means for the
// BundleDeployment (decideFailure).
type verdict int

// The verdicts, in the order decideFailure weighs them.
const (
	// verdictError: not a terminal failure (a lost connection, a
	// conflict): the reconcile returns the error, and the queue retries it
	// with backoff. Nothing is recorded about the revision.
	verdictError verdict = iota
	// verdictWaitForAdmin: refused for a permission the install identity
	// lacks. Nothing was applied; an admin's RBAC change (which triggers no
	// reconcile) lets it through, so it is looked at again now and then,
	// and the installed revision stays corrected for drift.
	verdictWaitForAdmin
	// verdictRetry: the world can fix it (a kind not served yet, a
	// namespace being deleted; the retry table of pkg/failure). Tried
	// again with backoff; the installed revision stays corrected.
	verdictRetry
	// verdictWaitForHandOff: its objects are another BundleDeployment's,
	// which is handing them over; the owner wakes it when it lets go.
	verdictWaitForHandOff
	// verdictRollBack: a write failed part-way (or a hook failed) and
	// upgrade.onFailure is Rollback with a last healthy revision: that
	// revision is applied again, and the failed one is held.
	verdictRollBack
	// verdictHold: the revision failed for good: recorded in
	// status.failedBundle and not tried again until the spec or the retry
	// annotation changes.
	verdictHold
)

// failureFacts are what decideFailure reads besides the error.
type failureFacts struct {
	// handOffWaits: the revision was refused only for objects another
	// BundleDeployment still manages and is handing over.
	handOffWaits bool
	// onFailure is spec.upgrade.onFailure (defaulted).
	onFailure v1alpha2.OnFailure
	// lastHealthy is status.lastHealthyBundle.
	lastHealthy string
}

// decideFailure decides what the failed install err means. It is pure:
// the reconcile acts on the verdict (installFailed).
func decideFailure(err error, f failureFacts) verdict {
	if failure.As(err) == nil {
		return verdictError
	}
	reason := failure.Reason(err, "")
	switch {
	case waitsForAdmin(err):
		return verdictWaitForAdmin
	case failure.PolicyOf(reason) == failure.Retry:
		return verdictRetry
	case f.handOffWaits && reason == v1alpha2.ReasonCollision:
		return verdictWaitForHandOff
	case (reason == v1alpha2.ReasonApplyFailed || reason == v1alpha2.ReasonHookFailed) &&
		f.onFailure == v1alpha2.OnFailureRollback && f.lastHealthy != "":
		return verdictRollBack
	}
	return verdictHold
}
