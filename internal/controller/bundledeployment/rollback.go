package bundledeployment

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/ownership"
	"github.com/rukpak/rukpak/internal/values"
)

// onFailure is the BundleDeployment's upgrade.onFailure, Rollback by default.
func onFailure(bd *v1alpha2.BundleDeployment) v1alpha2.OnFailure {
	if bd.Spec.Upgrade != nil && bd.Spec.Upgrade.OnFailure != "" {
		return bd.Spec.Upgrade.OnFailure
	}
	return v1alpha2.OnFailureRollback
}

// revisionOf returns the content of the BundleDeployment's revision bundle
// (its Bundle's pinned sources, config and values) for re-applying it. The
// name comes from status, which others can write: a Bundle this
// BundleDeployment did not create is refused (BundleNotOwned).
func (r *Reconciler) revisionOf(ctx context.Context, s *scope, bundle string) (revisionRef, error) {
	b := &v1alpha2.Bundle{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: bundle}, b); err != nil {
		return revisionRef{}, fmt.Errorf("getting Bundle %s: %w", bundle, err)
	}
	if err := ownership.Check(s.bd, b, r.bundleWriters()); err != nil {
		return revisionRef{}, err
	}
	digest, err := r.Unpacker.Ensure(ctx, b.Name, b.Spec.Sources, b.ContentDigest())
	if err != nil {
		return revisionRef{}, fmt.Errorf("unpacking revision %s: %w", bundle, err)
	}
	vals, err := values.Resolve(ctx, r.Client, v1alpha2.SystemNamespace, b.Spec.Config)
	if err != nil {
		return revisionRef{}, fmt.Errorf("values of revision %s: %w", bundle, err)
	}
	spec := ownership.SpecDigest(v1alpha2.BundleSpec{ProvisionerClassName: b.Spec.ProvisionerClassName, Sources: b.Spec.Sources, Config: b.Spec.Config}, vals.Digest)
	return revisionRef{bundle: b.Name, spec: spec, digest: digest, config: b.Spec.Config, values: vals, version: r.versionOf(b.Spec.Sources)}, nil
}

// rollback re-applies revision target (objects the failed revision pruned
// or changed included) and makes it the active one.
func (r *Reconciler) rollback(ctx context.Context, s *scope, target string) error {
	ref, err := r.revisionOf(ctx, s, target)
	if err != nil {
		return fmt.Errorf("rolling back to %s: %w", target, err)
	}
	res, err := r.applyRevision(ctx, s, s.mem.applied, ref)
	s.recordApplied(res)
	if err != nil {
		return fmt.Errorf("rolling back to %s: %w", target, err)
	}
	r.Recorder.Eventf(s.bd, nil, corev1.EventTypeWarning, v1alpha2.ReasonRolledBack, "Rollback",
		"Rolled back to revision %s: %d objects (%d created, %d configured, %d pruned)", target, res.changes.objects, res.changes.created, res.changes.configured, res.changes.deleted)
	s.facts.activated(target, res.changes.objects, ref.version)
	return nil
}
