package bundledeployment

import (
	"context"
	"errors"
	"fmt"

	"github.com/rukpak/rukpak/internal/review"
	"github.com/rukpak/rukpak/internal/tenant"
)

// Review slots: a review takes up to review.MaxAtoms atoms (about 50 MiB
// allocated at the limit), so at most DefaultReviewConcurrency run at
// once, and at most DefaultTenantReviewConcurrency of one tenant; a
// tenant waiting for its share takes none of the total.
const (
	// DefaultReviewConcurrency is how many reviews run at once.
	DefaultReviewConcurrency = 2
	// DefaultTenantReviewConcurrency is how many reviews of one tenant
	// run at once.
	DefaultTenantReviewConcurrency = 1
)

// reviewSlots returns the review slots, made on first use with the
// Reconciler's settings.
func (r *Reconciler) reviewSlots() *tenant.Slots {
	r.reviewsOnce.Do(func() {
		total := r.ReviewConcurrency
		if total < 1 {
			total = DefaultReviewConcurrency
		}
		perTenant := r.TenantReviewConcurrency
		if perTenant < 1 {
			perTenant = DefaultTenantReviewConcurrency
		}
		r.reviews = tenant.NewSlots(total, perTenant)
	})
	return r.reviews
}

// acquireReview waits for a review slot of the tenant ctx carries and
// returns the function that gives it back.
func (r *Reconciler) acquireReview(ctx context.Context) (func(), error) {
	release, err := r.reviewSlots().Acquire(ctx, "review")
	if err != nil {
		return nil, fmt.Errorf("waiting for a review slot: %w", err)
	}
	return release, nil
}

// isTooLarge reports whether err says a review would cost more than a
// review may: a failure of the revision itself, remembered with its review.
func isTooLarge(err error) bool {
	var tooLarge *review.TooLargeError
	return errors.As(err, &tooLarge)
}
