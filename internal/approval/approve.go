package approval

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// Approved is what Approve did.
type Approved struct {
	// Revision is the revision (Bundle) approved.
	Revision string
	// Digest is the approval digest the approval names
	// (status.review.digest): the approval binds to it, not to Revision.
	Digest string
	// Paused is set when the BundleDeployment is paused: the revision is
	// applied when it is unpaused.
	Paused bool
}

// Approve approves, as the user of c, the revision BundleDeployment name
// holds for approval, which must be want (its approval digest or its
// Bundle's name) when want is set: it sets the approve-revision annotation
// to status.review.digest, the digest of exactly what was reviewed.
// Admission then
// records that user as the approver and refuses the request unless they
// may approve it; its refusal is returned wrapped. rukpakctl approve and
// the Approve button of rukpakctl ui both call it.
func Approve(ctx context.Context, c client.Client, name, want string) (Approved, error) {
	bd := &v1alpha2.BundleDeployment{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
		return Approved{}, fmt.Errorf("getting BundleDeployment %s: %w", name, err)
	}
	r := bd.Status.Review
	if r == nil || r.Approved {
		return Approved{}, fmt.Errorf("bd/%s: no revision awaits approval (see rukpakctl review %s)", name, name)
	}
	if r.Digest == "" {
		return Approved{}, fmt.Errorf("bd/%s: revision %s awaits approval but status.review has no digest to approve (the manager predates approvals by digest)", name, r.Revision)
	}
	if want != "" && want != r.Revision && want != r.Digest {
		return Approved{}, fmt.Errorf("bd/%s: revision %s (%s) awaits approval, not %s: review it with rukpakctl review %s", name, r.Revision, r.Digest, want, name)
	}
	// approved-by is cleared as well, so that the patch changes the
	// approval annotations even when approve-revision names the revision
	// already (an approval that was not accepted: the requester's own
	// under --require-separate-approver, a revoked approver's): admission
	// then records this user as the approver (rukpak-approved-by) and
	// checks that they may approve, instead of letting an unchanged
	// annotation keep the earlier approver.
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": map[string]any{
			v1alpha2.AnnotationApproveRevision:  r.Digest,
			v1alpha2.AnnotationApprovedBy:       nil,
			v1alpha2.AnnotationApprovedByGroups: nil,
		},
	}})
	if err != nil {
		return Approved{}, fmt.Errorf("encoding the approval patch: %w", err)
	}
	if err := c.Patch(ctx, bd, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return Approved{}, fmt.Errorf("annotating BundleDeployment %s: %w", name, err)
	}
	return Approved{Revision: r.Revision, Digest: r.Digest, Paused: bd.Spec.Paused}, nil
}
