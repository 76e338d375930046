package manager

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/rukpak/rukpak/internal/approval"
	"github.com/rukpak/rukpak/internal/identity"
)

// whoAmI asks the API server who the manager is (a SelfSubjectReview):
// the requester check trusts the Bundles it writes itself, which carry its
// name in their requested-by annotations, and the CRD webhook its own
// changes.
func whoAmI(cfg *rest.Config) (authenticationv1.UserInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	self, err := identity.CurrentUser(ctx, cfg)
	if err != nil {
		return authenticationv1.UserInfo{}, fmt.Errorf("finding the manager's own user: %w", err)
	}
	return self, nil
}

// newApprovalChecker returns, when required, the re-check of requesters
// for the BundleDeployment and Bundle controllers (nil otherwise): the
// Bundles the manager (self) writes itself are not checked again. uploads
// tells who uploaded what.
func newApprovalChecker(self authenticationv1.UserInfo, kube kubernetes.Interface, uploads approval.Uploaders, required bool) *approval.Checker {
	if !required {
		return nil
	}
	return &approval.Checker{Reviews: kube.AuthorizationV1().SubjectAccessReviews(), TrustedUsers: []string{self.Username}, Uploads: uploads}
}
