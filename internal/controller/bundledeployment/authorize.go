package bundledeployment

import (
	"context"
	"time"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// defaultApprovalTTL is how long an allowed requester is trusted before it
// is checked again.
const defaultApprovalTTL = time.Minute

// approvedRequester is a requester found allowed, and when.
type approvedRequester struct {
	generation int64
	user       string
	groups     string
	at         time.Time
}

// authorize re-checks that whoever last changed the spec may impersonate
// its install identity and use its class (the admission policies check the
// same when the change is made; rights can be revoked since). An allowed
// requester is trusted for ApprovalTTL; a refusal stops the reconcile
// before anything is read or written as the identity.
func (r *Reconciler) authorize(ctx context.Context, s *scope) (bool, error) {
	if r.Approval == nil {
		return true, nil
	}
	bd := s.bd
	memo := approvedRequester{generation: bd.Generation, user: bd.Annotations[v1alpha2.AnnotationRequestedBy], groups: bd.Annotations[v1alpha2.AnnotationRequestedByGroups]}
	prev := s.mem.approval
	if prev != nil && prev.generation == memo.generation && prev.user == memo.user && prev.groups == memo.groups && time.Since(prev.at) < r.approvalTTL() {
		return true, nil
	}
	if err := r.Approval.Check(ctx, bd); err != nil {
		if failure.As(err) == nil {
			return false, err
		}
		s.installErr = err
		s.requeueWithin(adminRecheck(bd, err))
		return false, nil
	}
	memo.at = time.Now()
	s.mem.approval = &memo
	return true, nil
}

func (r *Reconciler) approvalTTL() time.Duration {
	if r.ApprovalTTL > 0 {
		return r.ApprovalTTL
	}
	return defaultApprovalTTL
}
