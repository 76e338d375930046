package bundledeployment

import (
	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// verdict is what a failure of a revision means for the BundleDeployment
// (decideFailure).
type verdict int

// The verdicts, in the order decideFailure weighs them.
const (
	// verdictError: not a terminal failure (a lost connection, a
	// conflict): the reconcile returns the error, and the queue retries it
	// with backoff. Nothing is recorded about the revision.
	verdictError verdict = iota
	// verdictBackoff: its sources could not be resolved or its content
	// unpacked. Even a terminal failure of a source (an unknown tag, bad
	// credentials, a missing ConfigMap) is often fixed outside the spec:
	// the reconcile returns the error with its reason (retryUnpack), so
	// the queue retries it with exponential backoff; the Unpacked
	// condition says why. Nothing is recorded about the revision.
	verdictBackoff
	// verdictRefuse: the spec itself is wrong (a config the class refuses,
	// Helm values that cannot be read, a health probe that cannot run):
	// nothing of the revision is applied, and the installed revision stays
	// corrected for drift until the spec changes. Nothing is recorded in
	// status.failedBundle: the spec change is the retry.
	verdictRefuse
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
	// verdictRollBack: a write failed part-way, a hook failed, or the
	// revision was not healthy within its progress deadline, and
	// upgrade.onFailure is Rollback with a last healthy revision other
	// than it: that revision is applied again, and the failed one is marked failed.
	verdictRollBack
	// verdictHold: the revision failed for good and is marked failed:
	// recorded in status.failedBundle and not tried again until the spec or the retry
	// annotation changes. A revision that missed its progress deadline is
	// left in place.
	verdictHold
)

// stage is where in a revision's way to being installed and healthy a
// failure happened.
type stage int

// The stages, in the order a revision goes through them.
const (
	// stageApply: rendering, checking (preflight, review, CRD safety) and
	// applying the revision. The zero value.
	stageApply stage = iota
	// stageResolve: pinning the revision's sources (resolve).
	stageResolve
	// stageUnpack: putting its content into the content store
	// (ensureContent).
	stageUnpack
	// stageConfig: checking the spec the revision is made of: its config
	// and Helm values (resolveValues), its health probes (checkProbes).
	stageConfig
	// stageHealth: the active revision was not healthy within its
	// progress deadline (rollingOut).
	stageHealth
)

// failureFacts are what decideFailure reads besides the error.
type failureFacts struct {
	// stage is where the failure happened.
	stage stage
	// revision is the revision that failed: the newest, or for stageHealth
	// the active one.
	revision string
	// handOffWaits: the revision was refused only for objects another
	// BundleDeployment still manages and is handing over.
	handOffWaits bool
	// onFailure is spec.upgrade.onFailure (defaulted).
	onFailure v1alpha2.OnFailure
	// lastHealthy is the last healthy revision (status.lastHealthyBundle,
	// as the reconcile knows it).
	lastHealthy string
}

// rollbackReasons are the failures that may have left part of a revision
// applied, or applied and not working: upgrade.onFailure Rollback undoes
// them. Every other failure happens before the first write.
var rollbackReasons = map[string]bool{
	v1alpha2.ReasonApplyFailed:              true,
	v1alpha2.ReasonHookFailed:               true,
	v1alpha2.ReasonProgressDeadlineExceeded: true,
}

// decideFailure decides what the failure err of a revision means, for
// every failure a revision can have (see stage). It is pure: the steps act
// on the verdict (installFailed, sourceFailed, refused, rollingOut).
func decideFailure(err error, f failureFacts) verdict {
	if failure.As(err) == nil {
		return verdictError
	}
	reason := failure.Reason(err, "")
	switch {
	case f.stage == stageResolve || f.stage == stageUnpack:
		return verdictBackoff
	case f.stage == stageConfig:
		return verdictRefuse
	case waitsForAdmin(err):
		return verdictWaitForAdmin
	case failure.PolicyOf(reason) == failure.Retry:
		return verdictRetry
	case f.handOffWaits && reason == v1alpha2.ReasonCollision:
		return verdictWaitForHandOff
	case rollbackReasons[reason] && f.onFailure == v1alpha2.OnFailureRollback &&
		f.lastHealthy != "" && f.lastHealthy != f.revision:
		return verdictRollBack
	}
	return verdictHold
}

// failureFacts are the facts decideFailure reads of a failure of revision
// at stage.
func (s *scope) failureFacts(st stage, revision string) failureFacts {
	return failureFacts{stage: st, revision: revision, handOffWaits: s.handOffWaits, onFailure: onFailure(s.bd), lastHealthy: s.facts.lastHealthy}
}
