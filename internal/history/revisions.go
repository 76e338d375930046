package history

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/ownership"
)

// Markers.
const (
	// MarkerActive marks bd's status.activeBundle.
	MarkerActive = "active"
	// MarkerLastHealthy marks bd's status.lastHealthyBundle.
	MarkerLastHealthy = "last-healthy"
	// MarkerFailed marks bd's status.failedBundle.
	MarkerFailed = "failed"
)

// Revisions reads the Bundles bd created, oldest first: labelled for it
// and controlled by it (its UID). A Bundle someone else labelled, or one a
// deleted BundleDeployment of the same name left, is not its history and
// is never a rollback target.
func Revisions(ctx context.Context, c client.Reader, bd *v1alpha2.BundleDeployment) ([]v1alpha2.Bundle, error) {
	list := &v1alpha2.BundleList{}
	if err := c.List(ctx, list, client.MatchingLabels{v1alpha2.LabelBundleDeployment: bd.Name}); err != nil {
		return nil, fmt.Errorf("listing Bundles of BundleDeployment %s: %w", bd.Name, err)
	}
	revs := slices.DeleteFunc(list.Items, func(b v1alpha2.Bundle) bool { return !ownership.Controlled(bd, &b) })
	Sort(revs)
	return revs, nil
}

// Sort orders Bundles oldest first, by name within one second, as the
// controller's history cleanup does.
func Sort(revs []v1alpha2.Bundle) {
	slices.SortStableFunc(revs, func(a, b v1alpha2.Bundle) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// Markers are the roles the status of bd gives revision name: MarkerActive,
// MarkerLastHealthy and MarkerFailed, in that order.
func Markers(bd *v1alpha2.BundleDeployment, name string) []string {
	var m []string
	for _, r := range []struct{ bundle, marker string }{
		{bd.Status.ActiveBundle, MarkerActive},
		{bd.Status.LastHealthyBundle, MarkerLastHealthy},
		{bd.Status.FailedBundle, MarkerFailed},
	} {
		if r.bundle == name {
			m = append(m, r.marker)
		}
	}
	return m
}
