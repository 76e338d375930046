package bundledeployment

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/metrics"
	"github.com/rukpak/rukpak/pkg/failure"
)

// failedRevision is a revision that failed, and what retries it.
type failedRevision struct {
	bundle     string
	retry      string
	generation int64
	// err is why, when this process recorded it.
	err error
}

// markedFailed reports whether the newest revision is marked failed and not to
// be retried yet: neither the spec (generation) nor the retry annotation
// changed since, and why it failed when this process knows (after a
// restart the status keeps saying it). The record is kept in status
// (s.facts.failed) and, because the cached status may lag behind this
// process's own updates, in memory. It changes nothing.
func markedFailed(s *scope) (marked bool, why error) {
	bd := s.bd
	mark := s.facts.failed
	f := failedRevision{bundle: mark.bundle, retry: mark.retry, generation: mark.generation}
	if m := s.mem.failed; m != nil && m.generation >= f.generation {
		f = *m
	}
	if f.bundle == "" || f.bundle != s.revision || bd.Annotations[v1alpha2.AnnotationRetry] != f.retry || bd.Generation > f.generation {
		return false, nil
	}
	return true, f.err
}

// markFailed records that revision failed, and why, for the
// BundleDeployment's current generation and retry annotation.
func (r *Reconciler) markFailed(s *scope, revision string, why error) {
	bd := s.bd
	s.facts.failed = failedMark{bundle: revision, retry: bd.Annotations[v1alpha2.AnnotationRetry], generation: bd.Generation}
	s.mem.failed = &failedRevision{bundle: revision, retry: s.facts.failed.retry, generation: bd.Generation, err: why}
}

// clearFailed forgets a failed revision that became healthy or
// installed, and its retries.
func (r *Reconciler) clearFailed(s *scope) {
	s.facts.failed = failedMark{}
	s.mem.failed = nil
	r.mem.forgetRetry(s.bd.Name, s.mem)
}

// installFailed acts on what a failed install means (decideFailure). A
// revision marked failed is recorded in status.failedBundle, so it is not retried
// until the spec or the retry annotation changes. Nothing was written when
// the failure came before the first write (render, validation,
// collisions); a failed write may have left part of the revision applied,
// which upgrade.onFailure=Rollback undoes by re-applying the last healthy
// revision.
func (r *Reconciler) installFailed(ctx context.Context, s *scope, err error) error {
	s.installErr = err
	v := decideFailure(err, s.failureFacts(stageApply, s.revision))
	if v == verdictError {
		return err
	}
	r.Recorder.Eventf(s.bd, nil, corev1.EventTypeWarning, failure.Reason(err, v1alpha2.ReasonApplyFailed), "Install",
		"Revision %s not installed: %v", s.revision, err)
	metrics.FailuresTotal.WithLabelValues(metrics.Class(s.bd.Spec.ProvisionerClassName), metrics.Reason(failure.Reason(err, v1alpha2.ReasonApplyFailed))).Inc()
	switch v {
	case verdictWaitForAdmin, verdictRetry:
		if v == verdictWaitForAdmin {
			s.requeueWithin(adminRecheck(s.bd, err))
		} else {
			// At once, too, when a CRD or APIService changes.
			s.requeueWithin(r.mem.nextRetry(s.bd.Name, s.mem, s.revision))
		}
		// Meanwhile the revision installed before is the corrected
		// revision, left as it was applied.
		if st := s.mem.applied; st != nil && st.bundle == s.facts.active {
			s.leaveAsApplied(st)
			return nil
		}
		return nil
	case verdictWaitForHandOff:
		// Looking again now and then covers a restart in between.
		s.requeueWithin(handOffRecheck)
		return nil
	}
	outcome := v1alpha2.OutcomeFailed
	if v == verdictRollBack {
		target := s.facts.lastHealthy
		rbErr := r.rollback(ctx, s, target)
		switch {
		case rbErr == nil:
			s.installErr = failure.New(v1alpha2.ReasonRolledBack, "revision %s failed to apply (%v); rolled back to %s%s", s.revision, err, target, keptNote(s.keptCRDs))
			outcome = v1alpha2.OutcomeRolledBack
			metrics.RollbacksTotal.WithLabelValues(metrics.Class(s.bd.Spec.ProvisionerClassName), metrics.Reason(failure.Reason(err, v1alpha2.ReasonApplyFailed))).Inc()
		case failure.As(rbErr) != nil:
			// status.lastHealthyBundle names a Bundle this
			// BundleDeployment did not create, or the rollback is
			// RollbackUnsafe (keepCRDs): nothing of it was applied.
			s.installErr = fmt.Errorf("revision %s failed to apply (%v); not rolled back: %w", s.revision, err, rbErr)
		default:
			return rbErr
		}
	}
	r.markFailed(s, s.revision, s.installErr)
	s.decide(s.revision, outcome, err.Error())
	return nil
}

// sourceFailed acts on a revision whose sources could not be resolved or
// whose content could not be unpacked (at stage st): recorded for the
// Unpacked condition, and returned for the queue to retry as
// decideFailure says.
func (s *scope) sourceFailed(st stage, err error) error {
	s.unpackErr = err
	if decideFailure(err, s.failureFacts(st, s.revision)) == verdictBackoff {
		return retryUnpack(err)
	}
	return err
}

// refused acts on a revision whose spec is refused (stageConfig): err is
// returned when decideFailure says it is not a failure of the revision;
// otherwise it is reported (Installed=False), and the revision applied
// before is the corrected revision, left as it was applied.
func (s *scope) refused(err error) error {
	if decideFailure(err, s.failureFacts(stageConfig, s.revision)) != verdictRefuse {
		return err
	}
	s.installErr = err
	if st := s.mem.applied; st != nil && st.bundle != "" {
		s.leaveAsApplied(st)
		return nil
	}
	return nil
}
