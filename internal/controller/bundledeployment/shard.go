package bundledeployment

import (
	"context"
	"time"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/shard"
)

// Shards (package shard): a BundleDeployment's Bundles carry its
// core.rukpak.io/shard label, so that a shard's manager caches only its
// own; before a reconcile, the Adopter moves those of a BundleDeployment
// relabelled to this manager's shard.

// adoptRetry is how soon a BundleDeployment is reconciled again after
// its adoption changed what the cache must show first.
const adoptRetry = 500 * time.Millisecond

// adopted reports whether bd can be reconciled now (shard.Adopter.Adopt);
// true when r has no Adopter.
func (r *Reconciler) adopted(ctx context.Context, bd *v1alpha2.BundleDeployment) (bool, error) {
	if r.Adopter == nil {
		return true, nil
	}
	return r.Adopter.Adopt(ctx, bd)
}

// shardBundle gives the Bundle b of a revision of bd bd's shard label.
func shardBundle(bd *v1alpha2.BundleDeployment, b *v1alpha2.Bundle) { shard.CopyLabel(bd, b) }
