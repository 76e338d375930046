package bundledeployment

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/approval"
	"github.com/rukpak/rukpak/internal/metrics"
	"github.com/rukpak/rukpak/internal/ownership"
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
// whether it may be applied (spec.upgrade.approval, at least the class's
// spec.minimumApproval). It reviews the revision (package review) when
// the policy is not Automatic, a revision is active (upgrades are always
// reviewed, and the review shown in status.review) or a revision was held
// before. A revision is held when the policy is Always, or PowerGrowth and
// it is an upgrade whose review grows power, unless it is approved (see
// approvedBy); and a revision held before under a higher policy stays held
// after the policy was lowered, unless the user who lowered it may approve
// (stillHeld). A held revision writes nothing: the active revision stays
// installed and drift-corrected, Installed says AwaitingApproval, and an
// event and a metric announce it once per revision. held is false when the
// revision may be applied.
//
// Everything the gate decides binds to the revision's approval digest
// (ownership.ApprovalDigest: its full spec, content and rendered objects
// digests), never to its name, a short hash that can be made to collide.
//
// The gate returns its verdict (gateVerdict): the caller hands the render
// and the plan preflighted it made to the apply.
//
// A revision is reviewed once against the same active revision: its
// review (or that it is too large to review) is remembered, so neither a
// held revision nor the retries of a refused apply are reviewed again.
// The permission preflight runs first: a revision it refuses is not
// reviewed at all.
func (r *Reconciler) gate(ctx context.Context, s *scope, st *appliedState, ref revisionRef) (gateVerdict, error) {
	// v is the verdict when the revision may be applied: the render and
	// the plan preflighted, made here, for the apply to take.
	var v gateVerdict
	active := s.facts.active
	applied := isApplied(st, active, ref, s.created)
	policy, notLowered, err := r.policyOf(ctx, s, !applied)
	if err != nil {
		return gateVerdict{held: true}, err
	}
	prior := heldBefore(s.written)
	if applied || (policy == v1alpha2.ApprovalAutomatic && active == "" && prior == nil) {
		return v, nil
	}
	// A revision reviewed before, against the same active one, has its
	// review remembered: it is rendered again only once it may be applied.
	key := reviewKey(ref)
	rev, digest, err := s.mem.reviewOf(key, active)
	fresh := rev == nil && err == nil
	if fresh {
		// Taken again by applyRevision: the revision is rendered once.
		v.render = r.planOf(ctx, s, ref)
		plan, objects := v.render.plan, v.render.objects
		if v.render.err != nil {
			// Not reviewable because not renderable: the apply reports why.
			return v, nil
		}
		if err := r.preflight(ctx, s, plan); err != nil {
			// Refused without a review: the apply reports why.
			return v, nil
		}
		v.preflighted = plan
		if err := r.storePending(ctx, s, v.render); err != nil {
			// Not reviewed nor applied without its render kept.
			if failure.As(err) == nil {
				return gateVerdict{held: true}, err
			}
			s.requeueWithin(permissionsRecheck)
			return gateVerdict{held: true}, r.leaveActiveAsApplied(ctx, s, st, err)
		}
		digest = ownership.ApprovalDigest(ref.spec, ref.digest, objects)
		rev, err = r.reviewRevision(ctx, s, st, plan.Objects())
		s.mem.setReview(key, active, digest, rev, err)
	}
	if err != nil && isTooLarge(err) {
		if held, err := r.reviewTooLarge(ctx, s, st, ref.bundle, policy, prior != nil, fresh, err); held || err != nil {
			return gateVerdict{held: held}, err
		}
		return v, nil
	}
	if err != nil {
		err = fmt.Errorf("reviewing revision %s: %w", ref.bundle, err)
		if policy == v1alpha2.ApprovalAutomatic && prior == nil {
			// Let through unreviewed; the event says so once the
			// apply says whether it was applied (reportUnreviewed).
			s.unreviewed = err
			return v, nil
		}
		s.requeueWithin(reviewRecheck)
		// Held with a reason of its own: nothing was applied, so not the
		// ApplyFailed an unclassified error would be reported as.
		return gateVerdict{held: true}, r.leaveActiveAsApplied(ctx, s, st, failure.New(v1alpha2.ReasonReviewFailed,
			"%v; not applied (spec.upgrade.approval %s holds a revision that cannot be reviewed), reviewed again within %s", err, policy, reviewRecheck))
	}
	s.review = &v1alpha2.BundleDeploymentReview{Revision: ref.bundle, Digest: digest, ActiveRevision: active, Approved: true, Review: *rev}
	var lowered error
	if !holds(policy, rev, active != "") {
		if prior == nil || prior.Digest != digest {
			return v, nil
		}
		by, why, err := r.loweredBy(ctx, s.bd)
		if err != nil {
			return gateVerdict{held: true}, err
		}
		if by != "" {
			s.review.ApprovedBy = by
			return v, nil
		}
		lowered = why
	}
	by, refused, err := r.approvedBy(ctx, s.bd, digest)
	if err != nil {
		return gateVerdict{held: true}, err
	}
	if by != "" {
		s.review.ApprovedBy = by
		return v, nil
	}
	s.review.Approved = false
	r.announceAwaiting(s, digest, rev)
	return gateVerdict{held: true}, r.leaveActiveAsApplied(ctx, s, st, awaitingApproval(s.bd, policy, rev, lowered, notLowered, refused))
}

// gateVerdict is what gate decided of a revision.
type gateVerdict struct {
	// held is set when the revision is not to be applied (now).
	held bool
	// render is the revision's render the gate made for its review, for
	// the apply to take (planOf); nil when it made none or held it.
	render *rendered
	// preflighted is the plan the permission preflight passed, so that
	// applying it does not check again.
	preflighted *apply.Plan
}

// reviewKey is what a review of revision ref is remembered by: its full
// spec and content digests.
func reviewKey(ref revisionRef) string { return ref.spec + " " + ref.digest }

// isApplied reports whether ref is the active revision as this process
// applied it: by name, and, when this process applied it (st), by its
// spec and content digests too, so that another revision under the same
// name is not taken for it. After a restart the name finds the active
// revision's Bundle, which has exactly the pinned spec (useBundle) —
// unless this reconcile created that Bundle (created): the active
// revision's was gone, and the one under its name now is reviewed as new.
func isApplied(st *appliedState, active string, ref revisionRef, created bool) bool {
	if active == "" || active != ref.bundle {
		return false
	}
	if st == nil || st.bundle != active {
		return !created
	}
	return st.spec == ref.spec && st.digest == ref.digest
}

// policyOf is the approval policy the revisions of s's BundleDeployment
// are held under: its spec.upgrade.approval in force (policyInForce,
// recorded in the facts), at least its class's spec.minimumApproval, the
// floor an admin sets and tenants cannot lower. notLowered says why a
// lowering of spec.upgrade.approval is not in force, nil when none is
// pending. Whether its maker may approve (a SubjectAccessReview) is asked
// only when a revision is to be decided (decide): a reconcile of the
// applied revision keeps the policy in force as it is, and asks nothing.
func (r *Reconciler) policyOf(ctx context.Context, s *scope, decide bool) (policy v1alpha2.ApprovalPolicy, notLowered, err error) {
	bd := s.bd
	asked := bd.Spec.Upgrade.Approval()
	var lowerer approverVerdict
	if decide && asked.Rank() < s.facts.approvalPolicy.Rank() {
		lowerer.by, lowerer.why, err = r.lowererMayApprove(ctx, bd)
		if err != nil {
			return s.facts.approvalPolicy.AtLeast(asked), nil, err
		}
	}
	own := policyInForce(s.facts.approvalPolicy, asked, lowerer)
	s.facts.approvalPolicy = own
	if own.AtLeast("") != asked {
		notLowered = lowerer.why
	}
	class := &v1alpha2.ProvisionerClass{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: bd.Spec.ProvisionerClassName}, class); err != nil {
		return own.AtLeast(asked), notLowered, fmt.Errorf("reading ProvisionerClass %s for its minimum approval policy: %w", bd.Spec.ProvisionerClassName, err)
	}
	return own.AtLeast(class.Spec.MinimumApproval), notLowered, nil
}

// approverVerdict is whether the user who lowered a policy may approve:
// by names them when they may, why says why not otherwise.
type approverVerdict struct {
	by  string
	why error
}

// policyInForce decides the spec.upgrade.approval in force, as recorded
// in status.approvalPolicy ("" for Automatic): inForce is the one in
// force so far, asked the spec's now, lowerer whether the user who
// lowered it may approve (asked only for a lowering). A raise is in force
// at once; a lowering once an approver made it: else inForce stays, so
// that a requester who may not approve cannot lower the gate even where
// admission did not refuse it.
func policyInForce(inForce, asked v1alpha2.ApprovalPolicy, lowerer approverVerdict) v1alpha2.ApprovalPolicy {
	policy := asked
	if asked.Rank() < inForce.Rank() && lowerer.by == "" {
		policy = inForce
	}
	if policy == v1alpha2.ApprovalAutomatic {
		return ""
	}
	return policy
}

// lowererMayApprove tells whether the user who last changed bd's spec
// (the requested-by annotations admission records), and so lowered its
// spec.upgrade.approval, may approve bd (a SubjectAccessReview): by names
// them when they may, why says why not. err is an error of the check.
func (r *Reconciler) lowererMayApprove(ctx context.Context, bd *v1alpha2.BundleDeployment) (by string, why, err error) {
	user, groups, ok := approval.Requester(bd)
	if !ok {
		return "", errors.New("spec.upgrade.approval was lowered, and no one is recorded as having changed the spec: the policy before stays in force"), nil
	}
	if err := r.approvalChecker().CheckMayApprove(ctx, bd, user, groups); err != nil {
		if failure.As(err) != nil {
			return "", fmt.Errorf("spec.upgrade.approval was lowered by user %q, who last changed the spec and may not approve it, so the policy before stays in force (status.approvalPolicy): %w", user, err), nil
		}
		return "", nil, fmt.Errorf("checking who lowered spec.upgrade.approval: %w", err)
	}
	return user, nil, nil
}

// heldBefore returns the review of the revision the status last written
// says is held (not approved), nil when none is. Only the manager writes
// status, so it says what the manager held.
func heldBefore(written *v1alpha2.BundleDeploymentStatus) *v1alpha2.BundleDeploymentReview {
	if written == nil || written.Review == nil || written.Review.Approved || written.Review.Digest == "" {
		return nil
	}
	return written.Review
}

// loweredBy returns the user whose lowering of the policy lets a revision
// held before through: the user who last changed bd's spec (the
// requested-by annotations admission records; the lowering is a change of
// the spec), when that user may approve bd (a SubjectAccessReview) and,
// with SeparateApprover, never (the lowering cannot be told apart from
// the request). Otherwise by is empty and why says why the revision stays
// held. err is an error of the review itself.
func (r *Reconciler) loweredBy(ctx context.Context, bd *v1alpha2.BundleDeployment) (by string, why, err error) {
	user, groups, ok := approval.Requester(bd)
	if !ok {
		return "", errors.New("no one is recorded as having lowered spec.upgrade.approval"), nil
	}
	if r.SeparateApprover {
		return "", fmt.Errorf("spec.upgrade.approval was lowered after the revision was held, and with --require-separate-approver a lowering by user %q, who last changed the spec, does not approve it", user), nil
	}
	if err := r.approvalChecker().CheckMayApprove(ctx, bd, user, groups); err != nil {
		if failure.As(err) != nil {
			return "", fmt.Errorf("spec.upgrade.approval was lowered after the revision was held, by user %q, who last changed the spec and may not approve it: %w", user, err), nil
		}
		return "", nil, fmt.Errorf("checking who lowered spec.upgrade.approval: %w", err)
	}
	return user, nil, nil
}

// approvalChecker is the Checker of approvers.
func (r *Reconciler) approvalChecker() *approval.Checker {
	if r.Approval != nil {
		return r.Approval
	}
	return &approval.Checker{Reviews: r.Permissions.Reviews}
}

// reviewTooLarge handles a revision whose review would cost more than a
// review may (err, a *review.TooLargeError, fresh when found in this
// reconcile): under Automatic, unless a revision was held before the
// policy was lowered (heldBefore), it is applied without a review, with a
// Warning event the first time; otherwise it is held with reason
// ReviewTooLarge naming the rule, and not reviewed again until the spec
// names another revision (or another one becomes active).
func (r *Reconciler) reviewTooLarge(ctx context.Context, s *scope, st *appliedState, revision string, policy v1alpha2.ApprovalPolicy, heldBefore, fresh bool, err error) (bool, error) {
	if policy == v1alpha2.ApprovalAutomatic && !heldBefore {
		if fresh {
			// The event says so once the apply says whether it was
			// applied (reportUnreviewed).
			s.unreviewed = fmt.Errorf("reviewing revision %s: %w", revision, err)
		}
		return false, nil
	}
	return true, r.leaveActiveAsApplied(ctx, s, st, failure.New(v1alpha2.ReasonReviewTooLarge,
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
// what grew, how to approve it and, when the policy was lowered without
// approving it or an approval was given but not accepted, why.
func awaitingApproval(bd *v1alpha2.BundleDeployment, policy v1alpha2.ApprovalPolicy, rev *v1alpha2.RevisionReview, lowered, notLowered, refused error) error {
	msg := fmt.Sprintf("waits for approval (spec.upgrade.approval %s)", policy)
	switch {
	case lowered != nil:
		msg = fmt.Sprintf("waits for the approval it was held for (spec.upgrade.approval is now %s): %v", policy, lowered)
	case notLowered != nil:
		msg = fmt.Sprintf("waits for approval (spec.upgrade.approval %s in force): %v", policy, notLowered)
	}
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
// revision's (rendered again, offline, or taken from its stored render) and
// the live cluster: each object read as the install identity, RBAC
// objects listed as the manager (splitLive).
//
// The new revision's cost is estimated first, before the active one is
// rendered; the review runs in a review slot of the tenant's.
func (r *Reconciler) reviewRevision(ctx context.Context, s *scope, st *appliedState, next []*unstructured.Unstructured) (*v1alpha2.RevisionReview, error) {
	if err := r.reviewer.CheckCost(next); err != nil {
		return nil, err
	}
	release, err := r.acquireReview(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	var activeObjs []*unstructured.Unstructured
	if active := s.facts.active; active != "" {
		var aref revisionRef
		if st != nil && st.bundle == active {
			aref = revisionRef{bundle: st.bundle, spec: st.spec, digest: st.digest, config: st.config, values: st.values}
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
	return r.reviewer.Compute(ctx, review.Input{
		Active: activeObjs, New: next, InstallNamespace: s.bd.Spec.InstallNamespace,
		Mapper: r.Client.RESTMapper(),
		Live:   splitLive{get: review.FromReader(s.as.engine.Reader()), list: review.FromReader(r.APIReader)},
	})
}

// reviewer reviews a new revision against the active one (package
// review).
type reviewer interface {
	// CheckCost refuses a revision too large to review
	// (*review.TooLargeError) before anything else is read.
	CheckCost(next []*unstructured.Unstructured) error
	// Compute reviews the revision.
	Compute(ctx context.Context, in review.Input) (*v1alpha2.RevisionReview, error)
}

// packageReviewer is the reviewer of package review.
type packageReviewer struct{}

var _ reviewer = packageReviewer{}

// CheckCost implements reviewer.
func (packageReviewer) CheckCost(next []*unstructured.Unstructured) error {
	return review.CheckCost(next)
}

// Compute implements reviewer.
func (packageReviewer) Compute(ctx context.Context, in review.Input) (*v1alpha2.RevisionReview, error) {
	return review.Compute(ctx, in)
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

// approvedBy returns the user whose approval lets the revision of approval
// digest digest through: the approve-revision annotation names that
// digest (never a name: two revisions can share one), the approved-by user
// (recorded by admission) may approve bd (verb approve, a
// SubjectAccessReview), and, with SeparateApprover, is not its requester.
// Otherwise by is empty and refused says why an approval was not accepted
// (nil when none names this revision). err is an error of the review
// itself.
func (r *Reconciler) approvedBy(ctx context.Context, bd *v1alpha2.BundleDeployment, digest string) (by string, refused, err error) {
	if given := bd.Annotations[v1alpha2.AnnotationApproveRevision]; given != digest {
		return "", staleApproval(given, digest), nil
	}
	user, _, ok := approval.Approver(bd)
	if !ok {
		return "", fmt.Errorf("no %s annotation says who approved it: the admission policy rukpak-approved-by of config/policy is not installed", v1alpha2.AnnotationApprovedBy), nil
	}
	if requester, _, _ := approval.Requester(bd); r.SeparateApprover && user == requester {
		return "", fmt.Errorf("user %q approved the revision they requested, and the manager runs with --require-separate-approver: another user must approve it", user), nil
	}
	if err := r.approvalChecker().CheckApprover(ctx, bd); err != nil {
		if failure.As(err) != nil {
			return "", err, nil
		}
		return "", nil, fmt.Errorf("checking the approval of revision %s: %w", digest, err)
	}
	return user, nil, nil
}

// staleApproval says why an approval given (the approve-revision
// annotation) that is not of the revision held is not accepted, when that
// needs saying: one that names a Bundle, as approvals did before they
// named digests, is not accepted, since a name is a short hash that
// another revision can share. nil for none, or an approval of another
// revision (the next one needs its own).
func staleApproval(given, digest string) error {
	if given == "" || strings.HasPrefix(given, digestPrefix) {
		return nil
	}
	return fmt.Errorf("%s names %q, not an approval digest: an approval names the revision's status.review.digest (%s), which `rukpakctl approve` sets",
		v1alpha2.AnnotationApproveRevision, given, digest)
}

// digestPrefix starts an approval digest.
const digestPrefix = "sha256:"

// announceAwaiting emits the AwaitingApproval event and counts the
// revision, once per revision: unless the status last written says it
// awaits approval already.
func (r *Reconciler) announceAwaiting(s *scope, digest string, rev *v1alpha2.RevisionReview) {
	if w := s.written; w != nil && w.Review != nil && w.Review.Digest == digest && !w.Review.Approved {
		return
	}
	metrics.AwaitingApprovalTotal.WithLabelValues(metrics.Class(s.bd.Spec.ProvisionerClassName)).Inc()
	r.Recorder.Eventf(s.bd, nil, corev1.EventTypeNormal, v1alpha2.ReasonAwaitingApproval, "Review",
		"Revision %s (%s) waits for approval: %s; run `rukpakctl approve %s`", s.review.Revision, digest, rev.Summary, s.bd.Name)
}

// leaveActiveAsApplied reports why the new revision is not applied
// (s.installErr) and makes the active revision the corrected revision,
// left as it was applied: its drift corrected, or, when this process has
// not applied it yet (it restarted) or its apply stopped before its prune
// (appliedState.unfinished), applied again.
func (r *Reconciler) leaveActiveAsApplied(ctx context.Context, s *scope, st *appliedState, why error) error {
	s.installErr = why
	active := s.facts.active
	switch {
	case active == "":
		return nil
	case st != nil && st.bundle == active && !st.unfinished:
		s.leaveAsApplied(st)
		return nil
	}
	// Not applied by this process yet (it restarted), or its apply
	// stopped before its prune: applied again.
	ref, err := r.revisionOf(ctx, s, active)
	if err != nil {
		return err
	}
	res, err := r.applyRevision(ctx, s, st, ref)
	s.recordApplied(res)
	return err
}

// reportUnreviewed emits the ReviewFailed event of a revision that could
// not be reviewed and that spec.upgrade.approval Automatic let through to
// the apply, saying what became of it (unreviewedNote); applyErr is the
// apply's error, nil when the revision was applied.
func (r *Reconciler) reportUnreviewed(s *scope, applyErr error) {
	if s.unreviewed == nil {
		return
	}
	reason := v1alpha2.ReasonReviewFailed
	if isTooLarge(s.unreviewed) {
		reason = v1alpha2.ReasonReviewTooLarge
	}
	r.Recorder.Eventf(s.bd, nil, corev1.EventTypeWarning, reason, "Review", "%s", unreviewedNote(s.unreviewed, applyErr))
}

// unreviewedNote is the note of the ReviewFailed event of a revision that
// could not be reviewed (reviewErr) and was let through to the apply:
// applied without a review when applyErr is nil, else not applied, and
// why (the reason the Installed condition gives).
func unreviewedNote(reviewErr, applyErr error) string {
	if applyErr == nil {
		return fmt.Sprintf("%v; applied without a review (spec.upgrade.approval is Automatic)", reviewErr)
	}
	why := failure.Reason(applyErr, "")
	if why == "" {
		why = "the apply failed and is retried"
	}
	return fmt.Sprintf("%v; not applied (%s, see the Installed condition), and it will be applied without a review once it can be (spec.upgrade.approval is Automatic)", reviewErr, why)
}
