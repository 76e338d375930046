package bundledeployment

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/controller/bundledeployment/schedule"
)

// reportHookWait writes, while a revision's apply waits for a hook Job or
// Pod, a Progressing condition saying which hook it waits for, until when,
// and (HookBlocked) what stops it from running: so that a hook that cannot
// run shows within seconds, not when its wait times out. The patch is made
// against the status as last written; the status patch at the end of the
// reconcile replaces the condition with what the reconcile found. The
// first report detaches the reconcile from its worker (schedule.Detach).
func (r *Reconciler) reportHookWait(ctx context.Context, s *scope, revision string, w apply.HookWait) {
	// The wait goes on without the reconcile worker, when there is room.
	schedule.Detach(ctx)
	bd := s.bd.DeepCopy()
	bd.Status = *s.written.DeepCopy()
	base := bd.DeepCopy()
	setCondition(bd, hookWaitCondition(revision, w))
	if err := r.Client.Status().Patch(ctx, bd, client.MergeFrom(base)); err != nil {
		// Only a report: the apply goes on, and the reconcile's own
		// status patch says how it ended.
		log.FromContext(ctx).V(1).Info("reporting a hook wait", "hook", w.ID.String(), "error", err.Error())
		return
	}
	*s.written = bd.Status
}

// hookWaitCondition is the Progressing condition of a revision waiting for
// hook w.
func hookWaitCondition(revision string, w apply.HookWait) metav1.Condition {
	msg := fmt.Sprintf("revision %s: waiting for %s hook %s to finish, until %s", revision, w.Phase, w.ID, w.Deadline.UTC().Format(time.RFC3339))
	if w.Blocked == "" {
		return metav1.Condition{Type: v1alpha2.TypeProgressing, Status: metav1.ConditionTrue, Reason: v1alpha2.ReasonHookRunning, Message: msg}
	}
	return metav1.Condition{Type: v1alpha2.TypeProgressing, Status: metav1.ConditionTrue, Reason: v1alpha2.ReasonHookBlocked,
		Message: msg + "; it cannot run as things stand: " + w.Blocked}
}
