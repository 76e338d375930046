package contentserver

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// countingKube is a fake client whose TokenReviews authenticate every
// token for Audience and whose SubjectAccessReviews allow everything,
// counting the requests of each.
func countingKube() (*fake.Clientset, map[string]int) {
	kube := fake.NewClientset()
	calls := map[string]int{}
	kube.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		calls["tokenreviews"]++
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview).DeepCopy()
		tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, Audiences: []string{Audience},
			User: authenticationv1.UserInfo{Username: "u"}}
		return true, tr, nil
	})
	kube.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		calls["subjectaccessreviews"]++
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		sar.Status.Allowed = true
		return true, sar, nil
	})
	return kube, calls
}

func TestReviewerCaches(t *testing.T) {
	ctx := context.Background()
	attrs := authorizationv1.ResourceAttributes{Verb: "get", Resource: "bundles", Name: "b"}
	tests := []struct {
		name string
		// run uses r; it returns no error when all went as expected.
		run                            func(r *reviewer) error
		wantTokenReviews, wantAccesses int
	}{
		{
			name: "a token is reviewed once while cached",
			run: func(r *reviewer) error {
				for range 3 {
					if _, err := r.authenticate(ctx, "t"); err != nil {
						return err
					}
				}
				return nil
			},
			wantTokenReviews: 1,
		},
		{
			name: "an access is reviewed once per token while cached",
			run: func(r *reviewer) error {
				user, err := r.authenticate(ctx, "t")
				if err != nil {
					return err
				}
				for range 3 {
					if ok, err := r.allowed(ctx, "t", user, attrs); err != nil || !ok {
						return fmt.Errorf("allowed = %v, %v", ok, err)
					}
				}
				return nil
			},
			wantTokenReviews: 1, wantAccesses: 1,
		},
		{
			name: "an expired review is asked again",
			run: func(r *reviewer) error {
				if _, err := r.authenticate(ctx, "t"); err != nil {
					return err
				}
				key := sha256.Sum256([]byte("t"))
				rv, _ := r.cached(key)
				rv.expires = time.Now().Add(-time.Second)
				r.remember(key, rv)
				_, err := r.authenticate(ctx, "t")
				return err
			},
			wantTokenReviews: 2,
		},
		{
			name: "past the bound the least recently used is forgotten",
			run: func(r *reviewer) error {
				for i := range maxReviews + 1 {
					if _, err := r.authenticate(ctx, fmt.Sprint(i)); err != nil {
						return err
					}
				}
				if _, err := r.authenticate(ctx, fmt.Sprint(maxReviews)); err != nil { // the newest: cached
					return err
				}
				_, err := r.authenticate(ctx, "0") // the oldest: forgotten
				return err
			},
			wantTokenReviews: maxReviews + 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kube, calls := countingKube()
			if err := tt.run(newReviewer(kube, Audience)); err != nil {
				t.Fatal(err)
			}
			if calls["tokenreviews"] != tt.wantTokenReviews || calls["subjectaccessreviews"] != tt.wantAccesses {
				t.Fatalf("TokenReviews = %d, SubjectAccessReviews = %d, want %d and %d",
					calls["tokenreviews"], calls["subjectaccessreviews"], tt.wantTokenReviews, tt.wantAccesses)
			}
		})
	}
}
