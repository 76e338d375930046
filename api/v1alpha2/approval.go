package v1alpha2

// Approval of new revisions (spec.upgrade.approval): the annotations an
// approver and admission write, the verb that allows approving, and the
// reason a revision waiting for approval is reported with.
const (
	// AnnotationApproveRevision on a BundleDeployment names the revision
	// (its Bundle's name) an approver approves. It approves that revision
	// only: a newer revision needs a new approval. rukpakctl approve sets
	// it to status.review.revision.
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
// they are applied.
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
