package bundledeployment

import (
	"context"
	"fmt"
	"sort"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/ownership"
)

// cleanupHistory deletes this BundleDeployment's Bundles beyond
// revisionHistoryLimit, oldest first; the active, last healthy and newest
// revisions are always retained.
func (r *Reconciler) cleanupHistory(ctx context.Context, s *scope) (bool, error) {
	bundles, err := r.bundlesLabelled(ctx, s.bd.Name)
	if err != nil {
		return false, err
	}
	limit := int(ptr.Deref(s.bd.Spec.RevisionHistoryLimit, 3))
	keep := map[string]bool{s.facts.active: true, s.facts.lastHealthy: true, s.revision: true}
	if st := s.mem.applied; st != nil {
		// Status can be written by others: what this process applied is
		// retained whatever status says.
		keep[st.bundle] = true
	}
	var old []v1alpha2.Bundle
	for _, b := range bundles {
		// Only Bundles this BundleDeployment controls are its history; a
		// Bundle someone else labelled is not deleted.
		if !keep[b.Name] && b.DeletionTimestamp.IsZero() && ownership.Controlled(s.bd, &b) {
			old = append(old, b)
		}
	}
	if len(old) <= limit {
		return true, nil
	}
	sort.Slice(old, func(i, j int) bool {
		return old[i].CreationTimestamp.Before(&old[j].CreationTimestamp) ||
			(old[i].CreationTimestamp.Equal(&old[j].CreationTimestamp) && old[i].Name < old[j].Name)
	})
	for i := range old[:len(old)-limit] {
		if err := r.Client.Delete(ctx, &old[i]); client.IgnoreNotFound(err) != nil {
			return false, fmt.Errorf("deleting old Bundle %s: %w", old[i].Name, err)
		}
	}
	return true, nil
}
