package bundledeployment

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/approval"
	"github.com/rukpak/rukpak/internal/metrics"
	"github.com/rukpak/rukpak/internal/review"
	"github.com/rukpak/rukpak/pkg/failure"
)

// The review reads, as the manager, the live RBAC objects (aggregation,
// bindings of changed roles) and webhook configurations.
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles;clusterrolebindings;roles;rolebindings,verbs=get;list
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations;mutatingwebhookconfigurations,verbs=get;list

// reviewRecheck is how soon a revision that could not be reviewed, under
// a policy that holds revisions, is reviewed again.
const reviewRecheck = time.Minute

// gate decides, before anything of the new revision ref is written,
// whether it may be applied (spec.upgrade.approval). It reviews the
// revision (package review) when the policy is not Automatic or a
// revision is active (upgrades are always reviewed, and the review shown
// in status.review). A revision is held when the policy is Always, or
// PowerGrowth and it is an upgrade whose review grows power, unless it is approved (see
// approvedBy). A held revision writes nothing: the active revision stays
// installed and drift-corrected, Installed says AwaitingApproval, and an
// event and a metric announce it once per revision. held is false when
// the revision may be applied.
//
// A revision is reviewed once against the same active revision: its
// review (or that it is too large to review) is remembered, so neither a
// held revision nor the retries of a refused apply are reviewed again.
// The permission preflight runs first: a revision it refuses is not
// reviewed at all.
func (r *Reconciler) gate(ctx context.Context, s *scope, st *appliedState, ref revisionRef) (held bool, err error) {
	policy := s.bd.Spec.Upgrade.Approval()
	active := s.bd.Status.ActiveBundle
	if active == ref.bundle || (policy == v1alpha2.ApprovalAutomatic && active == "") {
		return false, nil
	}
	// A revision reviewed before, against the same active one, keeps its
	// review: it is rendered again only once it may be applied.
	rev, err := s.mem.reviewOf(ref.bundle, active)
	fresh := rev == nil && err == nil
	if fresh {
		var plan *apply.Plan
		plan, err = r.planOf(ctx, s, ref)
		// Taken again by applyRevision: the revision is rendered once.
		s.rendered = &rendered{bundle: ref.bundle, digest: ref.digest, plan: plan, err: err}
		if err != nil {
			// Not reviewable because not renderable: the apply reports why.
			return false, nil
		}
		if err := r.preflight(ctx, s, plan); err != nil {
			// Refused without a review: the apply reports why.
			return false, nil
		}
		s.preflighted = plan
		if err := r.keepPending(ctx, s, ref.bundle); err != nil {
			// Not reviewed nor applied without its render kept.
			s.rendered = nil
			if failure.As(err) == nil {
				return true, err
			}
			s.requeueWithin(permissionsRecheck)
			return true, r.keepActive(ctx, s, st, err)
		}
		rev, err = r.reviewRevision(ctx, s, st, plan.Objects())
		s.mem.setReview(ref.bundle, active, rev, err)
	}
	if err != nil && isTooLarge(err) {
		return r.reviewTooLarge(ctx, s, st, ref.bundle, policy, fresh, err)
	}
	if err != nil {
		err = fmt.Errorf("reviewing revision %s: %w", ref.bundle, err)
		if policy == v1alpha2.ApprovalAutomatic {
			r.Recorder.Eventf(s.bd, nil, corev1.EventTypeWarning, v1alpha2.ReasonReviewFailed, "Review", "%v; applied without a review (spec.upgrade.approval is Automatic)", err)
			return false, nil
		}
		s.rendered = nil
		s.requeueWithin(reviewRecheck)
		// Held with a reason of its own: nothing was applied, so not the
		// ApplyFailed an unclassified error would be reported as.
		return true, r.keepActive(ctx, s, st, failure.New(v1alpha2.ReasonReviewFailed,
			"%v; not applied (spec.upgrade.approval %s holds a revision that cannot be reviewed), reviewed again within %s", err, policy, reviewRecheck))
	}
	s.review = &v1alpha2.BundleDeploymentReview{Revision: ref.bundle, ActiveRevision: active, Approved: true, Review: *rev}
	if !holds(policy, rev, active != "") {
		return false, nil
	}
	by, refused, err := r.approvedBy(ctx, s.bd, ref.bundle)
	if err != nil {
		return true, err
	}
	if by != "" {
		s.review.ApprovedBy = by
		return false, nil
	}
	s.rendered = nil
	s.review.Approved = false
	r.announceAwaiting(s, ref.bundle, rev)
	return true, r.keepActive(ctx, s, st, awaitingApproval(s.bd, policy, rev, refused))
}

// reviewTooLarge handles a revision whose review would cost more than a
// review may (err, a *review.TooLargeError, fresh when found in this
// reconcile): under Automatic it is applied without a review, with a
// Warning event the first time; otherwise it is held with reason
// ReviewTooLarge naming the rule, and not reviewed again until the spec
// names another revision (or another one becomes active).
func (r *Reconciler) reviewTooLarge(ctx context.Context, s *scope, st *appliedState, revision string, policy v1alpha2.ApprovalPolicy, fresh bool, err error) (bool, error) {
	if policy == v1alpha2.ApprovalAutomatic {
		if fresh {
			r.Recorder.Eventf(s.bd, nil, corev1.EventTypeWarning, v1alpha2.ReasonReviewTooLarge, "Review",
				"reviewing revision %s: %v; applied without a review (spec.upgrade.approval is Automatic)", revision, err)
		}
		return false, nil
	}
	s.rendered = nil
	return true, r.keepActive(ctx, s, st, failure.New(v1alpha2.ReasonReviewTooLarge,
		"reviewing revision %s: %v; not applied (spec.upgrade.approval %s holds a revision that cannot be reviewed) and not reviewed again: change the revision's rules",
		revision, err, policy))
}

// holds reports whether policy holds a revision with review rev until it
// is approved; upgrade is set when a revision is active. PowerGrowth holds
// upgrades only: a first install grows power from nothing, and its
// requester was allowed to ask for it (admission, approval.Checker).
func holds(policy v1alpha2.ApprovalPolicy, rev *v1alpha2.RevisionReview, upgrade bool) bool {
	switch policy {
	case v1alpha2.ApprovalAlways:
		return true
	case v1alpha2.ApprovalPowerGrowth:
		return upgrade && rev.GrowsPower
	}
	return false
}

// awaitingApproval is the AwaitingApproval failure of a held revision:
// what grew, how to approve it and, when an approval was given but not
// accepted, why.
func awaitingApproval(bd *v1alpha2.BundleDeployment, policy v1alpha2.ApprovalPolicy, rev *v1alpha2.RevisionReview, refused error) error {
	msg := fmt.Sprintf("waits for approval (spec.upgrade.approval %s)", policy)
	if rev.Summary != "" {
		msg += ": " + rev.Summary
	}
	msg += fmt.Sprintf("; review it with `rukpakctl review %s` and approve it with `rukpakctl approve %s` as a user allowed verb %q on bundledeployments %q (group %s)",
		bd.Name, bd.Name, v1alpha2.VerbApprove, bd.Name, v1alpha2.GroupVersion.Group)
	if refused != nil {
		msg += "; the approval given is not accepted: " + refused.Error()
	}
	return failure.New(v1alpha2.ReasonAwaitingApproval, "%s", msg)
}

// reviewRevision reviews the new revision's objects against the active
// revision's (rendered again, offline, or taken from its kept render) and
// the live cluster: each object read as the install identity, RBAC
// objects listed as the manager (splitLive).
//
// The new revision's cost is estimated first, before the active one is
// rendered; the review runs in a review slot of the tenant's.
func (r *Reconciler) reviewRevision(ctx context.Context, s *scope, st *appliedState, next []*unstructured.Unstructured) (*v1alpha2.RevisionReview, error) {
	if err := review.CheckCost(next); err != nil {
		return nil, err
	}
	release, err := r.acquireReview(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	var activeObjs []*unstructured.Unstructured
	if active := s.bd.Status.ActiveBundle; active != "" {
		var aref revisionRef
		if st != nil && st.bundle == active {
			aref = revisionRef{bundle: st.bundle, digest: st.digest, config: st.config, values: st.values}
		} else {
			var err error
			if aref, err = r.revisionOf(ctx, s, active); err != nil {
				return nil, fmt.Errorf("reading the active revision %s: %w", active, err)
			}
		}
		plan, err := r.plan(ctx, s, aref, renderOnly)
		if err != nil {
			return nil, fmt.Errorf("rendering the active revision %s: %w", active, err)
		}
		activeObjs = plan.Objects()
	}
	return review.Compute(ctx, review.Input{
		Active: activeObjs, New: next, InstallNamespace: s.bd.Spec.InstallNamespace,
		Mapper: r.Client.RESTMapper(),
		Live:   splitLive{get: review.FromReader(s.as.engine.Reader()), list: review.FromReader(r.APIReader)},
	})
}

// splitLive reads each live object as the install identity, which writes
// them and so may read them, and lists RBAC objects as the manager, which
// may (an install identity seldom may list every binding).
type splitLive struct{ get, list review.Live }

var _ review.Live = splitLive{}

// Get implements review.Live.
func (l splitLive) Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	return l.get.Get(ctx, gvk, namespace, name)
}

// List implements review.Live.
func (l splitLive) List(ctx context.Context, gvk schema.GroupVersionKind) ([]*unstructured.Unstructured, error) {
	return l.list.List(ctx, gvk)
}

// approvedBy returns the user whose approval lets revision through: the
// approve-revision annotation names it, the approved-by user (recorded by
// admission) may approve bd (verb approve, a SubjectAccessReview), and,
// with SeparateApprover, is not its requester. Otherwise by is empty and
// refused says why an approval of this revision was not accepted (nil when
// none names it). err is an error of the review itself.
func (r *Reconciler) approvedBy(ctx context.Context, bd *v1alpha2.BundleDeployment, revision string) (by string, refused, err error) {
	if bd.Annotations[v1alpha2.AnnotationApproveRevision] != revision {
		return "", nil, nil
	}
	user, _, ok := approval.Approver(bd)
	if !ok {
		return "", fmt.Errorf("no %s annotation says who approved it: the admission policy rukpak-approved-by of config/policy is not installed", v1alpha2.AnnotationApprovedBy), nil
	}
	if requester, _, _ := approval.Requester(bd); r.SeparateApprover && user == requester {
		return "", fmt.Errorf("user %q approved the revision they requested, and the manager runs with --require-separate-approver: another user must approve it", user), nil
	}
	checker := r.Approval
	if checker == nil {
		checker = &approval.Checker{Reviews: r.Permissions.Reviews}
	}
	if err := checker.CheckApprover(ctx, bd); err != nil {
		if failure.As(err) != nil {
			return "", err, nil
		}
		return "", nil, fmt.Errorf("checking the approval of revision %s: %w", revision, err)
	}
	return user, nil, nil
}

// announceAwaiting emits the AwaitingApproval event and counts the
// revision, once per revision: unless the status last written says it
// awaits approval already.
func (r *Reconciler) announceAwaiting(s *scope, revision string, rev *v1alpha2.RevisionReview) {
	if w := s.written; w != nil && w.Review != nil && w.Review.Revision == revision && !w.Review.Approved {
		return
	}
	metrics.AwaitingApprovalTotal.WithLabelValues(metrics.Class(s.bd.Spec.ProvisionerClassName)).Inc()
	r.Recorder.Eventf(s.bd, nil, corev1.EventTypeNormal, v1alpha2.ReasonAwaitingApproval, "Review",
		"Revision %s waits for approval: %s; run `rukpakctl approve %s`", revision, rev.Summary, s.bd.Name)
}

// keepActive reports why the new revision is not applied (s.installErr)
// and keeps the active revision as it was applied: its drift corrected,
// or, when this process has not applied it yet (it restarted), applied
// again to know its objects.
func (r *Reconciler) keepActive(ctx context.Context, s *scope, st *appliedState, why error) error {
	s.installErr = why
	active := s.bd.Status.ActiveBundle
	switch {
	case active == "":
		return nil
	case st != nil && st.bundle == active:
		return s.keepCorrected(st)
	}
	ref, err := r.revisionOf(ctx, s, active)
	if err != nil {
		return err
	}
	_, err = r.applyRevision(ctx, s, st, ref)
	return err
}
