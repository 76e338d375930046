package bundledeployment

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/health"
	"github.com/rukpak/rukpak/internal/inventory"
	"github.com/rukpak/rukpak/internal/metrics"
	"github.com/rukpak/rukpak/pkg/failure"
)

// Health re-check intervals: while a revision rolls out, and once settled
// (status changes of managed objects do not trigger reconciles).
const (
	rolloutRecheck = 3 * time.Second
	settledRecheck = time.Minute
	// defaultProgressDeadline applies without spec.healthChecks.
	defaultProgressDeadline = 600 * time.Second
)

// healthFacts are what the health step found of the active revision;
// computeStatus turns them into the Healthy and Progressing conditions
// (healthyCondition, progressingCondition).
type healthFacts struct {
	// revision is the revision judged (the active one).
	revision string
	// invalid is why the probes could not be compiled: no verdict.
	invalid error
	// relevant is how many objects were checked.
	relevant int
	// summary says what is not healthy; "" when everything is.
	summary string
	// rollout is what the verdict means for the revision's rollout.
	rollout rollout
	// restart is set when a new rollout begins: the Progressing
	// condition's clock (its lastTransitionTime) starts again.
	restart bool
	// left is how long a rollout that waits has until its deadline.
	left time.Duration
	// why says why a rollout failed its deadline.
	why string
}

// rollout is what a health verdict means for the active revision's
// rollout.
type rollout int

// The rollouts.
const (
	// rolloutSettled: healthy, nothing is rolling out.
	rolloutSettled rollout = iota
	// rolloutJudged: not healthy, but healthy before or failed already:
	// reported, never rolled back.
	rolloutJudged
	// rolloutWaiting: not healthy yet, within the progress deadline.
	rolloutWaiting
	// rolloutFailed: not healthy within the progress deadline.
	rolloutFailed
)

// healthReader reads the objects of the active revision a health check
// judges that the drift watches do not show (readForHealth).
type healthReader interface {
	// Read reads ids of owner's revision as reader (the install
	// identity) and calls visit with each, nil when it is not there.
	Read(ctx context.Context, reader client.Reader, owner string, ids []inventory.ID, visit func(inventory.ID, *unstructured.Unstructured)) error
}

// liveHealthReader reads from the API server (readForHealth: by list
// where a kind has many objects in a namespace).
type liveHealthReader struct{}

var _ healthReader = liveHealthReader{}

// Read implements healthReader.
func (liveHealthReader) Read(ctx context.Context, reader client.Reader, owner string, ids []inventory.ID, visit func(inventory.ID, *unstructured.Unstructured)) error {
	return readForHealth(ctx, reader, owner, ids, visit)
}

// progressDeadline is how long a new revision may take to become healthy.
func progressDeadline(bd *v1alpha2.BundleDeployment) time.Duration {
	if hc := bd.Spec.HealthChecks; hc != nil && hc.ProgressDeadlineSeconds != nil {
		return time.Duration(*hc.ProgressDeadlineSeconds) * time.Second
	}
	return defaultProgressDeadline
}

// checkHealth judges the active revision with the built-in and user probes
// and records its verdict in the scope (healthFacts: computeStatus makes
// Healthy and Progressing of it). A revision that is not healthy within
// the progress deadline has failed: upgrade.onFailure Rollback re-applies
// the last healthy revision, Hold leaves it in place; either way it is not
// retried until the spec or the retry annotation changes.
func (r *Reconciler) checkHealth(ctx context.Context, s *scope) error {
	bd := s.bd
	active := s.facts.active
	st := s.mem.applied
	if active == "" || st == nil || st.bundle != active {
		return nil
	}
	var probes []v1alpha2.Probe
	if bd.Spec.HealthChecks != nil {
		probes = bd.Spec.HealthChecks.Probes
	}
	checker, err := r.healthCache.Checker(probes)
	if err != nil {
		s.health = &healthFacts{revision: active, invalid: err}
		return nil
	}
	var relevantIDs []inventory.ID
	for _, id := range st.ids {
		a := r.mem.object(st, id)
		if a.hook || !checker.Relevant(schema.GroupKind{Group: id.Group, Kind: id.Kind}) {
			// A hook is judged when it runs (HookFailed), not after.
			continue
		}
		relevantIDs = append(relevantIDs, id)
	}
	// Lists visit in their own order: reported in the revision's.
	verdicts := map[inventory.ID]health.Unhealthy{}
	memo := make(map[inventory.ID]healthVerdict, len(relevantIDs))
	// Objects the drift watch shows at the resourceVersion the last check
	// judged have that verdict still; the others are read.
	var toRead []inventory.ID
	for _, id := range relevantIDs {
		a := r.mem.object(st, id)
		if seen, ok := r.watched.Get(watchKey(s.as.id, id, a.resource), id.Namespace, id.Name); ok {
			if u, ok := s.mem.verdict(checker, id, seen.GetResourceVersion()); ok {
				memo[id] = healthVerdict{rv: seen.GetResourceVersion(), unhealthy: u}
				if u != nil {
					verdicts[id] = *u
				}
				continue
			}
		}
		toRead = append(toRead, id)
	}
	err = r.healthReader.Read(ctx, s.as.engine.Reader(), bd.Name, toRead, func(id inventory.ID, obj *unstructured.Unstructured) {
		if obj == nil {
			if a := r.mem.object(st, id); a.runOnce && a.rv != "" {
				return // a Job its TTL removed once it finished
			}
			verdicts[id] = health.Unhealthy{Object: id.String(), Reason: "not found"}
			return
		}
		v := healthVerdict{rv: obj.GetResourceVersion()}
		if res := checker.Check(obj); !res.Healthy {
			u := health.Unhealthy{Object: id.String(), Reason: res.Reason}
			verdicts[id] = u
			v.unhealthy = &u
		}
		memo[id] = v
	})
	if err != nil {
		return err
	}
	s.mem.setVerdicts(checker, memo)
	relevant := len(relevantIDs)
	var unhealthy []health.Unhealthy
	for _, id := range relevantIDs {
		if u, ok := verdicts[id]; ok {
			unhealthy = append(unhealthy, u)
		}
	}
	if len(unhealthy) == 0 {
		r.healthy(s, relevant)
		return nil
	}
	summary := health.Summary(unhealthy, relevant)
	s.health = &healthFacts{revision: active, relevant: relevant, summary: summary, rollout: rolloutJudged}
	if s.facts.lastHealthy == active || s.facts.failed.bundle == active {
		// Healthy before, or judged already: report, do not roll back.
		s.requeueWithin(settledRecheck / 4)
		return nil
	}
	return r.rollingOut(ctx, s)
}

// healthy records that the active revision passes every probe.
func (r *Reconciler) healthy(s *scope, relevant int) {
	active := s.facts.active
	s.health = &healthFacts{revision: active, relevant: relevant, rollout: rolloutSettled}
	if s.facts.lastHealthy != active {
		s.facts.lastHealthy = active
		s.decide(active, v1alpha2.OutcomeHealthy, "")
	}
	if s.facts.failed.bundle == active {
		r.clearFailed(s)
	}
	if relevant > 0 {
		s.requeueWithin(settledRecheck)
	}
}

// rolloutLeft is how long the active revision's rollout has left at now
// before its progress deadline, and whether a new rollout begins (its
// clock starts now): when this reconcile made the revision active
// (started), or the observed Progressing condition does not say it is
// rolling out. Its clock is otherwise that condition's. It changes
// nothing.
func rolloutLeft(bd *v1alpha2.BundleDeployment, started bool, now time.Time) (left time.Duration, restart bool) {
	begin := now
	prog := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeProgressing)
	if started || prog == nil || prog.Status != metav1.ConditionTrue || prog.Reason != v1alpha2.ReasonRollingOut {
		restart = true
	} else {
		begin = prog.LastTransitionTime.Time
	}
	return begin.Add(progressDeadline(bd)).Sub(now), restart
}

// rollingOut handles an active revision that is not healthy yet (s.health
// says why): it waits until the progress deadline, then fails the
// revision and acts on what decideFailure says of that (stageHealth):
// roll back, or leave it in place, marked failed (onFailure Hold). The rollout's clock is the observed
// Progressing condition's.
func (r *Reconciler) rollingOut(ctx context.Context, s *scope) error {
	bd := s.bd
	active := s.facts.active
	h := s.health
	deadline := progressDeadline(bd)
	left, restart := rolloutLeft(bd, s.rolloutStarted, time.Now())
	h.restart = restart
	if left > 0 {
		h.rollout, h.left = rolloutWaiting, left
		s.requeueWithin(min(rolloutRecheck, left+time.Second))
		return nil
	}

	why := fmt.Sprintf("revision %s was not healthy within %s: %s", active, deadline, h.summary)
	h.rollout, h.why = rolloutFailed, why
	missed := failure.New(v1alpha2.ReasonProgressDeadlineExceeded, "%s", why)
	target := s.facts.lastHealthy
	if decideFailure(missed, s.failureFacts(stageHealth, active)) != verdictRollBack {
		r.markFailed(s, active, failure.New(v1alpha2.ReasonProgressDeadlineExceeded, "%s; left in place (upgrade.onFailure)", why))
		r.Recorder.Eventf(bd, nil, corev1.EventTypeWarning, v1alpha2.ReasonProgressDeadlineExceeded, "Health", "%s; left in place", why)
		s.decide(active, v1alpha2.OutcomeFailed, why)
		return nil
	}
	if err := r.rollback(ctx, s, target); err != nil {
		if failure.As(err) == nil {
			return err
		}
		// The target is not this BundleDeployment's (status names a
		// Bundle it did not create), or rolling back would leave custom
		// resources unservable (RollbackUnsafe, keepCRDs): left in
		// place, and said why.
		s.installErr = fmt.Errorf("%s; not rolled back: %w", why, err)
		r.markFailed(s, active, s.installErr)
		r.Recorder.Eventf(bd, nil, corev1.EventTypeWarning, failure.Reason(err, v1alpha2.ReasonBundleNotOwned), "Health", "%v", s.installErr)
		s.decide(active, v1alpha2.OutcomeFailed, s.installErr.Error())
		return nil
	}
	s.decide(active, v1alpha2.OutcomeRolledBack, why)
	metrics.RollbacksTotal.WithLabelValues(metrics.Class(bd.Spec.ProvisionerClassName), v1alpha2.ReasonProgressDeadlineExceeded).Inc()
	s.rolledBack = failure.New(v1alpha2.ReasonRolledBack, "%s; rolled back to revision %s%s", why, target, keptNote(s.keptCRDs))
	r.markFailed(s, active, s.rolledBack)
	s.requeueWithin(time.Second)
	return nil
}
