package bundledeployment

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// readyCondition derives the Ready summary from the other conditions of a
// BundleDeployment at generation: True only when Paused is False,
// Installed and Healthy are True and Progressing is False, all for
// generation. Otherwise False with the reason and message of the first
// condition that stops it from being ready, in the order a user fixes
// them: paused, not installed, stale (the reconcile has not caught up with
// the spec), not healthy, still rolling out.
// It reads nothing but conds, so what it says can never contradict them.
func readyCondition(conds []metav1.Condition, generation int64) metav1.Condition {
	notReady := func(reason, format string, args ...any) metav1.Condition {
		return metav1.Condition{Type: v1alpha2.TypeReady, Status: metav1.ConditionFalse, Reason: reason, Message: fmt.Sprintf(format, args...)}
	}
	if c := meta.FindStatusCondition(conds, v1alpha2.TypePaused); c != nil && c.Status == metav1.ConditionTrue {
		return notReady(v1alpha2.ReasonPaused, "paused: %s", c.Message)
	}
	installed := meta.FindStatusCondition(conds, v1alpha2.TypeInstalled)
	switch {
	case installed == nil:
		return notReady(v1alpha2.ReasonNotInstalled, "not installed yet")
	case installed.ObservedGeneration == generation && installed.Status != metav1.ConditionTrue:
		return notReady(installed.Reason, "not installed: %s", installed.Message)
	}
	for _, typ := range []string{v1alpha2.TypePaused, v1alpha2.TypeInstalled, v1alpha2.TypeHealthy, v1alpha2.TypeProgressing} {
		if c := meta.FindStatusCondition(conds, typ); c != nil && c.ObservedGeneration != generation {
			return notReady(v1alpha2.ReasonReconciling, "%s describes generation %d, not the current %d: the change is being reconciled", typ, c.ObservedGeneration, generation)
		}
	}
	healthy := meta.FindStatusCondition(conds, v1alpha2.TypeHealthy)
	switch {
	case healthy == nil:
		return notReady(v1alpha2.ReasonRollingOut, "installed; health not judged yet")
	case healthy.Status != metav1.ConditionTrue:
		return notReady(healthy.Reason, "not healthy: %s", healthy.Message)
	}
	if p := meta.FindStatusCondition(conds, v1alpha2.TypeProgressing); p == nil || p.Status != metav1.ConditionFalse {
		msg := "a revision is rolling out"
		if p != nil {
			msg = p.Message
		}
		return notReady(v1alpha2.ReasonRollingOut, "%s", msg)
	}
	return metav1.Condition{Type: v1alpha2.TypeReady, Status: metav1.ConditionTrue, Reason: v1alpha2.ReasonReady,
		Message: fmt.Sprintf("installed and healthy: %s", healthy.Message)}
}
