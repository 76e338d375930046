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

// heldBack reports whether the newest revision failed before and is not to
// be retried yet: neither the spec (generation) nor the retry annotation
// changed since. The record is kept in status and, because the cached
// status may lag behind this process's own updates, in memory.
func (r *Reconciler) heldBack(s *scope) bool {
	bd := s.bd
	f := failedRevision{bundle: bd.Status.FailedBundle, retry: bd.Status.FailedRetry, generation: bd.Status.FailedGeneration}
	if m := s.mem.failed; m != nil && m.generation >= f.generation {
		f = *m
	}
	if f.bundle == "" || f.bundle != s.revision || bd.Annotations[v1alpha2.AnnotationRetry] != f.retry || bd.Generation > f.generation {
		return false
	}
	// Report why it failed, when this process knows (after a restart the
	// status keeps saying it).
	if f.err != nil {
		s.installErr = f.err
	}
	return true
}

// markFailed records that revision failed, and why, for the
// BundleDeployment's current generation and retry annotation.
func (r *Reconciler) markFailed(s *scope, revision string, why error) {
	bd := s.bd
	bd.Status.FailedBundle = revision
	bd.Status.FailedRetry = bd.Annotations[v1alpha2.AnnotationRetry]
	bd.Status.FailedGeneration = bd.Generation
	s.mem.failed = &failedRevision{bundle: revision, retry: bd.Status.FailedRetry, generation: bd.Generation, err: why}
}

// clearFailed forgets a failed revision that became healthy or
// installed, and its retries.
func (r *Reconciler) clearFailed(s *scope) {
	s.bd.Status.FailedBundle, s.bd.Status.FailedRetry, s.bd.Status.FailedGeneration = "", "", 0
	s.mem.failed = nil
	r.mem.forgetRetry(s.bd.Name, s.mem)
}

// installFailed acts on what a failed install means (decideFailure). A
// held revision is recorded in status.failedBundle, so it is not retried
// until the spec or the retry annotation changes. Nothing was written when
// the failure came before the first write (render, validation,
// collisions); a failed write may have left part of the revision applied,
// which upgrade.onFailure=Rollback undoes by re-applying the last healthy
// revision.
func (r *Reconciler) installFailed(ctx context.Context, s *scope, err error) error {
	s.installErr = err
	v := decideFailure(err, failureFacts{handOffWaits: s.handOffWaits, onFailure: onFailure(s.bd), lastHealthy: s.bd.Status.LastHealthyBundle})
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
		// Meanwhile the revision installed before is kept as it was
		// applied.
		if st := s.mem.applied; st != nil && st.bundle == s.bd.Status.ActiveBundle {
			return s.keepCorrected(st)
		}
		return nil
	case verdictWaitForHandOff:
		// Looking again now and then covers a restart in between.
		s.requeueWithin(handOffRecheck)
		return nil
	}
	outcome := v1alpha2.OutcomeFailed
	if v == verdictRollBack {
		target := s.bd.Status.LastHealthyBundle
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
