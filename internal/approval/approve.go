package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// ErrNotAwaited is wrapped by Approve's refusals of an approval that names
// something other than the revision awaiting approval, or when none does.
var ErrNotAwaited = errors.New("not the revision awaiting approval")

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
// holds for approval, whose approval digest (status.review.digest) must be
// want when want is set: it sets the approve-revision annotation to that
// digest, the digest of exactly what was reviewed. A revision's name is
// not accepted as want: other content can carry the same name (it is a
// shortened digest), so naming it would not say what was reviewed.
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
		return Approved{}, fmt.Errorf("bd/%s: no revision awaits approval (see rukpakctl review %s): %w", name, name, ErrNotAwaited)
	}
	if r.Digest == "" {
		return Approved{}, fmt.Errorf("bd/%s: revision %s awaits approval but status.review has no digest to approve (the manager predates approvals by digest)", name, r.Revision)
	}
	if want != "" && !strings.HasPrefix(want, "sha256:") {
		return Approved{}, fmt.Errorf("bd/%s: %q is not an approval digest: name the revision you reviewed by the digest rukpakctl review prints (sha256:…), not by its name, which other content can share: %w", name, want, ErrNotAwaited)
	}
	if want != "" && want != r.Digest {
		return Approved{}, fmt.Errorf("bd/%s: revision %s (%s) awaits approval, not %s: review it with rukpakctl review %s: %w", name, r.Revision, r.Digest, want, name, ErrNotAwaited)
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
