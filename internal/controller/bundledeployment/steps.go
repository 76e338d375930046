package bundledeployment

import (
	"context"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// step is one step of a reconcile (see the package doc): it reads and
// records what it finds in the scope, and reports whether the steps after
// it run.
type step struct {
	// name names the step in the package doc.
	name string
	run  func(context.Context, *scope) (next bool, err error)
	// always runs the step even when an earlier one ended the list, once
	// the install identity is known: health is judged whatever became of
	// the newest revision (the active one may still be rolling out).
	always bool
}

// steps are the steps of a reconcile, in order. History comes after
// health, so that a revision that just became the last healthy one is
// retained.
func (r *Reconciler) steps() []step {
	return []step{
		{name: "authorize", run: r.authorize},
		{name: "act", run: r.act},
		{name: "trust status", run: r.trustStatus},
		{name: "resolve", run: r.resolve},
		{name: "bundle", run: r.findBundle},
		{name: "content", run: r.ensureContent},
		{name: "record", run: r.createBundle},
		{name: "install", run: r.install},
		{name: "drift", run: r.driftStep, always: true},
		{name: "health", run: r.healthStep, always: true},
		{name: "history", run: r.cleanupHistory},
	}
}

// runSteps runs the steps over s until one ends the list (then only the
// steps that always run, if the install identity is known) or fails.
func (r *Reconciler) runSteps(ctx context.Context, s *scope) error {
	stopped := false
	for _, st := range r.steps() {
		if stopped && !(st.always && s.as != nil) {
			continue
		}
		next, err := st.run(ctx, s)
		if err != nil {
			return err
		}
		if !next {
			stopped = true
		}
	}
	return nil
}

// driftStep corrects the drift of the corrected revision, which an earlier
// step decided to leave as it was applied (scope.leaveAsApplied): the
// installed one, when the newest is installed already, held for approval,
// marked failed, waiting or refused. It never ends the list.
func (r *Reconciler) driftStep(ctx context.Context, s *scope) (bool, error) {
	if s.correct == nil {
		return true, nil
	}
	err := r.correctDrift(ctx, s, s.correct)
	if failure.Reason(err, "") == v1alpha2.ReasonUnknownKind {
		// A kind of the installed revision is not served any more (its
		// CRD was deleted): corrected again once it is (waitsForKind),
		// and meanwhile with the queue's backoff.
		s.driftErr = err
	}
	return true, err
}

// healthStep judges the newest revision's health (checkHealth); it never
// ends the list.
func (r *Reconciler) healthStep(ctx context.Context, s *scope) (bool, error) {
	return true, r.checkHealth(ctx, s)
}
