package v1alpha2

// Approval of new revisions (spec.upgrade.approval): the annotations an
// approver and admission write, the verb that allows approving, and the
// reason a revision waiting for approval is reported with.
const (
	// AnnotationApproveRevision on a BundleDeployment names the revision
	// an approver approves by its approval digest ("sha256:<64 hex>",
	// status.review.digest): a digest of the revision's pinned spec, its
	// content and its rendered objects (ApprovalDigest), never its Bundle's
	// name, which is a short hash that can collide. It approves that
	// revision only: a newer revision, or another one under the same name,
	// needs a new approval. rukpakctl approve sets it to
	// status.review.digest.
	AnnotationApproveRevision = "core.rukpak.io/approve-revision"
	// AnnotationApprovedBy is the user who last set
	// AnnotationApproveRevision. The MutatingAdmissionPolicy in
	// config/policy records it from the request (a value a user writes is
	// replaced), and the manager checks that this user may approve.
	AnnotationApprovedBy = "core.rukpak.io/approved-by"
	// AnnotationApprovedByGroups is that user's groups, encoded as
	// AnnotationRequestedByGroups is.
	AnnotationApprovedByGroups = "core.rukpak.io/approved-by-groups"
	// VerbApprove is the verb a user must be allowed on bundledeployments
	// (group core.rukpak.io, the BundleDeployment's name) to approve its
	// revisions.
	VerbApprove = "approve"
	// ReasonAwaitingApproval: Installed (and Ready) are False because the
	// newest revision waits for an approval (spec.upgrade.approval); the
	// active revision stays installed.
	ReasonAwaitingApproval = "AwaitingApproval"
	// ReasonReviewFailed: the newest revision could not be reviewed (a
	// read of the cluster failed, its RBAC rules expand past what a review
	// may hold). Under spec.upgrade.approval PowerGrowth and Always,
	// Installed (and Ready) are False with this reason, nothing of the
	// revision is written, the active revision stays installed and the
	// revision is reviewed again within a minute; under Automatic it is
	// the reason of a Warning event, and the revision is applied.
	ReasonReviewFailed = "ReviewFailed"
)

// ApprovalPolicy decides which new revisions wait for an approval before
// they are applied. The policies are ordered, Automatic < PowerGrowth <
// Always: lowering a BundleDeployment's policy is itself an approval, so
// admission refuses it to users who may not approve the BundleDeployment,
// and a revision held under the higher policy stays held unless the user
// who lowered it may approve (docs/security.md, "Approving upgrades").
// +kubebuilder:validation:Enum=Automatic;PowerGrowth;Always
type ApprovalPolicy string

const (
	// ApprovalAutomatic applies every new revision without approval.
	ApprovalAutomatic ApprovalPolicy = "Automatic"
	// ApprovalPowerGrowth holds a revision whose review grows power
	// (RevisionReview.GrowsPower) until it is approved.
	ApprovalPowerGrowth ApprovalPolicy = "PowerGrowth"
	// ApprovalAlways holds every new revision, the first install included,
	// until it is approved.
	ApprovalAlways ApprovalPolicy = "Always"
)

// Rank orders the policies: 0 for Automatic (or an unknown value), 1 for
// PowerGrowth, 2 for Always. A policy of higher rank holds every revision
// one of lower rank holds.
func (a ApprovalPolicy) Rank() int {
	switch a {
	case ApprovalPowerGrowth:
		return 1
	case ApprovalAlways:
		return 2
	}
	return 0
}

// AtLeast returns the higher of a and floor (an empty value counts as
// Automatic): the policy in force when floor is the minimum an admin set.
func (a ApprovalPolicy) AtLeast(floor ApprovalPolicy) ApprovalPolicy {
	if a == "" {
		a = ApprovalAutomatic
	}
	if floor.Rank() > a.Rank() {
		return floor
	}
	return a
}

// Approval returns p's approval policy; ApprovalAutomatic for a nil policy
// or an empty field.
func (p *UpgradePolicy) Approval() ApprovalPolicy {
	if p == nil || p.ApprovalPolicy == "" {
		return ApprovalAutomatic
	}
	return p.ApprovalPolicy
}

// BundleDeploymentReview is the review of a BundleDeployment's newest
// revision and whether it may be applied.
type BundleDeploymentReview struct {
	// revision is the Bundle of the reviewed revision.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Revision string `json:"revision"`

	// digest is the reviewed revision's approval digest
	// ("sha256:<64 hex>"): a digest of its pinned spec (class, sources,
	// config, resolved values), its content and its rendered objects. An
	// approval names this digest (annotation core.rukpak.io/approve-revision)
	// and is valid for nothing else: not for another revision that has
	// the same Bundle name.
	// +optional
	// +kubebuilder:validation:MaxLength=71
	// +kubebuilder:validation:Pattern=`^sha256:[0-9a-f]{64}$`
	Digest string `json:"digest,omitempty"`

	// activeRevision is the Bundle it was compared with; empty for a first
	// install.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ActiveRevision string `json:"activeRevision,omitempty"`

	// approved is true when the revision may be applied: the policy does
	// not hold it, or an allowed user approved it.
	// +required
	Approved bool `json:"approved"`

	// approvedBy is the user whose approval let the revision through;
	// empty when the policy did not hold it.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ApprovedBy string `json:"approvedBy,omitempty"`

	// review is what the revision changes.
	// +required
	Review RevisionReview `json:"review"`
}
