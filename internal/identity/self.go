package identity

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The manager asks once, at start, who it is.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=selfsubjectreviews,verbs=create

// CurrentUser returns who cfg authenticates as (user name and groups),
// asking the API server with a SelfSubjectReview.
func CurrentUser(ctx context.Context, cfg *rest.Config) (authenticationv1.UserInfo, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return authenticationv1.UserInfo{}, fmt.Errorf("creating clientset: %w", err)
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, fmt.Errorf("asking the API server who we are: %w", err)
	}
	if review.Status.UserInfo.Username == "" {
		return authenticationv1.UserInfo{}, fmt.Errorf("asking the API server who we are: empty user name")
	}
	return review.Status.UserInfo, nil
}
