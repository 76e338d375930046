package bundledeployment

import (
	"context"
	"fmt"

	"github.com/rukpak/rukpak/pkg/failure"
)

// ensureContent makes sure the revision's content is in the store: the
// content its Bundle records, or, for a revision without a Bundle yet, its
// pinned sources unpacked now. Content that cannot be unpacked leaves no
// Bundle behind: the Unpacked condition says why, and the next try creates
// the Bundle once it unpacks.
func (r *Reconciler) ensureContent(ctx context.Context, s *scope) (bool, error) {
	known := ""
	if s.bundle != nil {
		known = s.bundle.ContentDigest()
	}
	digest, err := r.Unpacker.Ensure(ctx, s.revision, s.pinned, known)
	if err != nil {
		return false, s.sourceFailed(stageUnpack, err)
	}
	s.digest = digest
	return true, nil
}

// retryUnpack returns the error of a failed resolve or unpack
// (verdictBackoff) so that it is retried with exponential backoff (up to about 16 minutes apart): even a
// terminal failure of a source (unknown tag, bad credentials, a missing
// ConfigMap) is often fixed outside the spec — the tag is pushed, the Secret
// corrected. The condition already says why.
func retryUnpack(err error) error {
	if f := failure.As(err); f != nil {
		return fmt.Errorf("%s: %w", f.Reason, err)
	}
	return err
}
