package bundledeployment

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/message"
	"github.com/rukpak/rukpak/pkg/failure"
)

// computeStatus derives every status field bd's reconcile sets from what
// it found (the scope), over the status as observed: observedGeneration,
// the fields of the revisions, sources and failures (projectFacts), the
// review, the conditions (Paused, Unpacked, Installed, Healthy,
// Progressing), and last the Ready summary of them all. A paused reconcile
// changes nothing but Paused (and so Ready). It is pure: the steps record
// facts, and nothing reads the status it sets within the reconcile.
func computeStatus(bd *v1alpha2.BundleDeployment, s *scope) {
	bd.Status.ObservedGeneration = bd.Generation
	if s.review != nil {
		bd.Status.Review = s.review
	}
	setCondition(bd, pausedCondition(bd.Spec.Paused))
	if !bd.Spec.Paused {
		projectFacts(&bd.Status, s.facts)
		if c := unpackedCondition(s); c != nil {
			setCondition(bd, *c)
		}
		if c := installedCondition(s, s.facts.active, meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled)); c != nil {
			setCondition(bd, *c)
		}
		if h := s.health; h != nil {
			setCondition(bd, healthyCondition(h))
			if h.restart {
				// A new rollout: the condition's clock starts now.
				meta.RemoveStatusCondition(&bd.Status.Conditions, v1alpha2.TypeProgressing)
			}
			if c := progressingCondition(h, meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeProgressing)); c != nil {
				setCondition(bd, *c)
			}
		}
	}
	setCondition(bd, readyCondition(bd.Status.Conditions, bd.Generation))
}

func setCondition(bd *v1alpha2.BundleDeployment, c metav1.Condition) {
	c.ObservedGeneration = bd.Generation
	message.SetCondition(&bd.Status.Conditions, c)
}

func pausedCondition(paused bool) metav1.Condition {
	if paused {
		return metav1.Condition{Type: v1alpha2.TypePaused, Status: metav1.ConditionTrue, Reason: v1alpha2.ReasonPaused,
			Message: "spec.paused is set: rukpak makes no changes, drift correction included"}
	}
	return metav1.Condition{Type: v1alpha2.TypePaused, Status: metav1.ConditionFalse, Reason: v1alpha2.ReasonNotPaused,
		Message: "spec.paused is not set"}
}

// unpackedCondition is nil when the reconcile did not get as far as
// unpacking (nothing new is known).
func unpackedCondition(s *scope) *metav1.Condition {
	switch {
	case s.unpackErr != nil:
		return &metav1.Condition{Type: v1alpha2.TypeUnpacked, Status: metav1.ConditionFalse,
			Reason: failure.Reason(s.unpackErr, v1alpha2.ReasonUnpackFailed), Message: s.unpackErr.Error()}
	case s.digest != "" && len(s.facts.unpublished) > 0:
		msg := fmt.Sprintf("revision %s unpacked, content %s", s.revision, s.digest)
		for _, u := range s.facts.unpublished {
			msg += fmt.Sprintf("; source %d: version %s is no longer published (the newest in range is %s), and stays selected", u.Source, u.Version, u.Newest)
		}
		return &metav1.Condition{Type: v1alpha2.TypeUnpacked, Status: metav1.ConditionTrue, Reason: v1alpha2.ReasonNoLongerPublished, Message: msg}
	case s.digest != "":
		return &metav1.Condition{Type: v1alpha2.TypeUnpacked, Status: metav1.ConditionTrue, Reason: v1alpha2.ReasonUnpacked,
			Message: fmt.Sprintf("revision %s unpacked, content %s", s.revision, s.digest)}
	}
	return nil
}

// installedCondition reports the newest revision's install. When it failed,
// the message says which revision is still installed. A revision marked
// failed carries over the condition that reported the failure.
func installedCondition(s *scope, active string, current *metav1.Condition) *metav1.Condition {
	switch {
	case s.rolledBack != nil:
		return &metav1.Condition{Type: v1alpha2.TypeInstalled, Status: metav1.ConditionFalse,
			Reason: failure.Reason(s.rolledBack, v1alpha2.ReasonRolledBack), Message: s.rolledBack.Error()}
	case s.markedFailed && s.installErr == nil:
		if current == nil || current.Status == metav1.ConditionTrue {
			return &metav1.Condition{Type: v1alpha2.TypeInstalled, Status: metav1.ConditionFalse, Reason: v1alpha2.ReasonApplyFailed,
				Message: fmt.Sprintf("revision %s failed before and is not retried until the spec or the %s annotation changes; revision %s remains installed",
					s.revision, v1alpha2.AnnotationRetry, active)}
		}
		held := *current
		return &held
	case s.installErr != nil:
		msg := s.installErr.Error()
		if s.revision != "" {
			msg = fmt.Sprintf("revision %s: %v", s.revision, s.installErr)
		}
		if active != "" && active != s.revision {
			msg += fmt.Sprintf("; revision %s remains installed", active)
		}
		return &metav1.Condition{Type: v1alpha2.TypeInstalled, Status: metav1.ConditionFalse,
			Reason: failure.Reason(s.installErr, v1alpha2.ReasonApplyFailed), Message: msg}
	case s.statusRefused != nil:
		msg := s.statusRefused.Error()
		if active != "" {
			msg += fmt.Sprintf("; revision %s remains installed", active)
		}
		return &metav1.Condition{Type: v1alpha2.TypeInstalled, Status: metav1.ConditionFalse,
			Reason: failure.Reason(s.statusRefused, v1alpha2.ReasonBundleNotOwned), Message: msg}
	case s.installed != nil:
		msg := fmt.Sprintf("revision %s installed: %d objects", active, s.installed.objects) + keptNote(s.keptCRDs)
		if len(s.warnings) > 0 {
			msg += "; API server warnings: " + strings.Join(s.warnings, "; ")
		}
		return &metav1.Condition{Type: v1alpha2.TypeInstalled, Status: metav1.ConditionTrue, Reason: v1alpha2.ReasonInstalled, Message: msg}
	case s.unpackErr != nil:
		if active != "" {
			// The active revision is still installed: Installed stays as it is.
			return nil
		}
		msg := fmt.Sprintf("waiting for revision %s to unpack", s.revision)
		if s.revision == "" {
			msg = "waiting for sources to resolve"
		}
		return &metav1.Condition{Type: v1alpha2.TypeInstalled, Status: metav1.ConditionFalse,
			Reason: v1alpha2.ReasonInstallPending, Message: msg}
	}
	return nil
}

// healthyCondition reports the health verdict h of the active revision.
func healthyCondition(h *healthFacts) metav1.Condition {
	switch {
	case h.invalid != nil:
		return metav1.Condition{Type: v1alpha2.TypeHealthy, Status: metav1.ConditionFalse,
			Reason: failure.Reason(h.invalid, v1alpha2.ReasonInvalidConfig), Message: h.invalid.Error()}
	case h.summary != "":
		return metav1.Condition{Type: v1alpha2.TypeHealthy, Status: metav1.ConditionFalse, Reason: v1alpha2.ReasonUnhealthy,
			Message: fmt.Sprintf("revision %s: %s", h.revision, h.summary)}
	case h.relevant == 0:
		return metav1.Condition{Type: v1alpha2.TypeHealthy, Status: metav1.ConditionTrue, Reason: v1alpha2.ReasonHealthy,
			Message: fmt.Sprintf("revision %s: no object needs a health check", h.revision)}
	}
	return metav1.Condition{Type: v1alpha2.TypeHealthy, Status: metav1.ConditionTrue, Reason: v1alpha2.ReasonHealthy,
		Message: fmt.Sprintf("revision %s: %d object(s) checked, all healthy", h.revision, h.relevant)}
}

// progressingCondition reports the rollout of the active revision from its
// health verdict h and the Progressing condition as it stands (current,
// nil when there is none): nil leaves it as it is. Invalid probes give no
// verdict, and a revision judged before that is not healthy any more
// carries over what it had, but for the message of a settled one, which must not say
// "healthy" next to Healthy=False.
func progressingCondition(h *healthFacts, current *metav1.Condition) *metav1.Condition {
	if h.invalid != nil {
		return nil
	}
	switch h.rollout {
	case rolloutSettled:
		return &metav1.Condition{Type: v1alpha2.TypeProgressing, Status: metav1.ConditionFalse, Reason: v1alpha2.ReasonSettled,
			Message: fmt.Sprintf("revision %s is installed and healthy", h.revision)}
	case rolloutJudged:
		if current == nil || current.Reason != v1alpha2.ReasonSettled {
			return nil
		}
		return &metav1.Condition{Type: v1alpha2.TypeProgressing, Status: metav1.ConditionFalse, Reason: v1alpha2.ReasonSettled,
			Message: fmt.Sprintf("revision %s is installed; it was healthy and is not now (see Healthy); nothing is rolling out", h.revision)}
	case rolloutWaiting:
		return &metav1.Condition{Type: v1alpha2.TypeProgressing, Status: metav1.ConditionTrue, Reason: v1alpha2.ReasonRollingOut,
			Message: fmt.Sprintf("revision %s rolling out, %s left: %s", h.revision, h.left.Round(time.Second), h.summary)}
	}
	return &metav1.Condition{Type: v1alpha2.TypeProgressing, Status: metav1.ConditionFalse, Reason: v1alpha2.ReasonProgressDeadlineExceeded, Message: h.why}
}
