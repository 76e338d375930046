package schedule

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// conflictRetry is how soon a reconcile that met only write conflicts runs
// again.
const conflictRetry = 200 * time.Millisecond

// quietConflicts turns an error made only of write conflicts (409: another
// writer changed the object between rukpak's read and its write — a user
// editing an object while its drift is corrected, another replica's
// inventory write), the status patch's included, into a requeue after
// conflictRetry, logged at debug level. The next reconcile reads again and
// almost always succeeds, so a conflict is not a "Reconciler error". An
// error that also contains anything else is returned as it is.
func quietConflicts(ctx context.Context, result ctrl.Result, err error) (ctrl.Result, error) {
	if err == nil || !onlyConflicts(err) {
		return result, err
	}
	log.FromContext(ctx).V(1).Info("write conflict: reconciling again", "after", conflictRetry, "conflict", err.Error())
	return ctrl.Result{RequeueAfter: conflictRetry}, nil
}

// onlyConflicts reports whether err is a conflict, or errors joined of
// which each is one.
func onlyConflicts(err error) bool {
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		errs := joined.Unwrap()
		for _, e := range errs {
			if !onlyConflicts(e) {
				return false
			}
		}
		return len(errs) > 0
	}
	return apierrors.IsConflict(err)
}
