package bundledeployment

import (
	"errors"
	"testing"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/review"
)

// TestReviewRemembered checks what a reconcile keeps of a review: a
// review, and that a revision is too large to review, are kept for that
// revision against that active one; a failed read is not (it is tried
// again).
func TestReviewRemembered(t *testing.T) {
	rev := &v1alpha2.RevisionReview{Summary: "grows no power"}
	tooLarge := &review.TooLargeError{Estimated: 476160, Limit: review.MaxAtoms}
	tests := []struct {
		name             string
		review           *v1alpha2.RevisionReview
		err              error
		revision, active string
		wantReview       bool
		wantErr          bool
	}{
		{name: "a review", review: rev, revision: "r2", active: "r1", wantReview: true},
		{name: "too large", err: tooLarge, revision: "r2", active: "r1", wantErr: true},
		{name: "too large, wrapped", err: errors.Join(errors.New("reviewing"), tooLarge), revision: "r2", active: "r1", wantErr: true},
		{name: "a failed read is not kept", err: errors.New("connection refused"), revision: "r2", active: "r1"},
		{name: "another revision", review: rev, revision: "r3", active: "r1"},
		{name: "another active revision", review: rev, revision: "r2", active: "r0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &remembered{}
			m.setReview("r2", "r1", "digest", tt.review, tt.err)
			got, digest, err := m.reviewOf(tt.revision, tt.active)
			if (got != nil) != tt.wantReview || (err != nil) != tt.wantErr {
				t.Fatalf("reviewOf(%s, %s) = %v, %v; want review %v, error %v", tt.revision, tt.active, got, err, tt.wantReview, tt.wantErr)
			}
			if got != nil && digest != "digest" {
				t.Errorf("digest %q remembered with the review, want %q", digest, "digest")
			}
			if tt.wantErr && !isTooLarge(err) {
				t.Errorf("kept error %v is not a review too large", err)
			}
		})
	}
}
