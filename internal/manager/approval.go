package manager

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/rukpak/rukpak/internal/approval"
	"github.com/rukpak/rukpak/internal/crdwebhook"
)

// newApprovalChecker returns the re-check of requesters for the
// BundleDeployment and Bundle controllers. It asks the API server who the
// manager is (a SelfSubjectReview): the Bundles the manager writes itself
// are not checked again. uploads tells who uploaded what.
func newApprovalChecker(cfg *rest.Config, kube kubernetes.Interface, uploads approval.Uploaders) (*approval.Checker, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	self, err := crdwebhook.CurrentUser(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("setting up the requester re-check: %w", err)
	}
	return &approval.Checker{Reviews: kube.AuthorizationV1().SubjectAccessReviews(), TrustedUsers: []string{self}, Uploads: uploads}, nil
}
