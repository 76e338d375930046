package approval

import (
	"context"
	"fmt"
	"slices"

	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/upload"
)

// UploadResource is the virtual RBAC resource (group core.rukpak.io) of
// uploads: verb create lets a user upload through the content server, verb
// use on resourceNames [HEX] lets a user name the upload sha256:HEX without
// having uploaded it.
const UploadResource = "uploads"

// Uploaders tells who uploaded an upload; *upload.Store is one.
type Uploaders interface {
	// Uploaders returns the user names that uploaded digest. A missing
	// upload is a *failure.Error.
	Uploaders(ctx context.Context, digest string) ([]string, error)
}

var _ Uploaders = (*upload.Store)(nil)

// uploadRef is an upload a spec names, and who may name it without a
// grant besides its requester.
type uploadRef struct {
	digest, field string
	// identity is the user name of the ServiceAccount the
	// BundleDeployment installs as ("" for a Bundle, or when it installs
	// as the manager): `rukpakctl run` uploads as that ServiceAccount, and
	// the requester may act as it (checked before).
	identity string
}

// uploadReviews are the checks of every distinct upload sources name, at
// the first field naming it: the requester (or identity) uploaded it, or
// may use uploads/HEX.
func uploadReviews(sources []v1alpha2.BundleSource, identity string) []review {
	var out []review
	seen := map[string]bool{}
	for i, s := range sources {
		if s.Upload == nil || seen[s.Upload.Digest] {
			continue
		}
		seen[s.Upload.Digest] = true
		ref := uploadRef{digest: s.Upload.Digest, field: fmt.Sprintf("spec.sources[%d].upload.digest", i), identity: identity}
		hex, err := upload.ParseDigest(ref.digest)
		if err != nil {
			hex = ref.digest // refused by the CRD schema; checked by name all the same
		}
		out = append(out, review{
			attributes: &authorizationv1.ResourceAttributes{
				Verb: "use", Group: v1alpha2.GroupVersion.Group, Resource: UploadResource, Name: hex,
			},
			denied: uploadDenied(ref, hex),
			upload: &ref,
		})
	}
	return out
}

// uploadDenied says that the requester may not name the upload, and how
// to grant it.
func uploadDenied(ref uploadRef, hex string) string {
	who := "the user did not upload it"
	if ref.identity != "" {
		who = fmt.Sprintf("neither the user nor the install identity %q uploaded it", ref.identity)
	}
	return fmt.Sprintf(`may not use upload %s, named by %s: %s, and its use was not granted to them; `+
		`upload the content yourself (the content server records who uploads), or have its uploader or an admin grant it with a ClusterRole allowing verb "use" on %s (apiGroups [%q]) with resourceNames [%q], bound to the user or one of their groups`,
		ref.digest, ref.field, who, UploadResource, v1alpha2.GroupVersion.Group, hex)
}

// uploadedBy reports whether user, or ref's identity, uploaded ref's
// upload. Without an Uploaders no one did.
func (c *Checker) uploadedBy(ctx context.Context, ref *uploadRef, user string) (bool, error) {
	if c.Uploads == nil {
		return false, nil
	}
	users, err := c.Uploads.Uploaders(ctx, ref.digest)
	if err != nil {
		return false, fmt.Errorf("reading the uploaders of %s: %w", ref.digest, err)
	}
	return slices.Contains(users, user) || (ref.identity != "" && slices.Contains(users, ref.identity)), nil
}
