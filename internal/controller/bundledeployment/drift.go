package bundledeployment

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/identity"
	"github.com/rukpak/rukpak/internal/inventory"
	"github.com/rukpak/rukpak/internal/metrics"
	"github.com/rukpak/rukpak/internal/objectwatch"
)

// watchKeys are the watches drift detection of ids needs as identity id:
// the manager watches each kind cluster-wide; a ServiceAccount, which may
// only be allowed to list in some namespaces, each kind in each namespace
// it has objects in (cluster-scoped kinds cluster-wide).
func watchKeys(id identity.Identity, res []apply.Resource) []objectwatch.Key {
	seen := map[objectwatch.Key]bool{}
	var out []objectwatch.Key
	for _, o := range res {
		k := watchKey(id, o.ID, o.Resource)
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

func watchKey(id identity.Identity, obj inventory.ID, resource schema.GroupVersionResource) objectwatch.Key {
	k := objectwatch.Key{Identity: id, Resource: resource, Kind: obj.GroupVersionKind()}
	if !id.IsManager() {
		k.Namespace = obj.Namespace
	}
	return k
}

// onObjectEvent enqueues the owner of a managed object whose change is
// drift (not the echo of rukpak's own write, nor a change only to what
// others own); while the owner's reconcile runs, when it ends.
func (r *Reconciler) onObjectEvent(kind schema.GroupVersionKind, obj, old *metav1.PartialObjectMetadata, deleted bool) {
	// Deferred while the owner's reconcile runs (schedule.Turn.End judges
	// it), judged now otherwise (isUnchanged).
	r.sched.ObjectEvent(obj.GetLabels()[v1alpha2.LabelOwnerName], kind, obj, deleted)
	// The owner label itself may have been removed or changed.
	if old != nil && old.GetLabels()[v1alpha2.LabelOwnerName] != obj.GetLabels()[v1alpha2.LabelOwnerName] {
		r.enqueue(old.GetLabels()[v1alpha2.LabelOwnerName])
	}
}

// enqueue queues the BundleDeployment name.
func (r *Reconciler) enqueue(name string) { r.sched.Enqueue(name) }

// leaveAsApplied records that the revision applied, st, is left as it was
// applied: the drift step corrects its drift (correctDrift).
func (s *scope) leaveAsApplied(st *appliedState) {
	s.correct = st
}

// correctDrift re-applies objects of the applied revision that were deleted
// or changed by someone else.
func (r *Reconciler) correctDrift(ctx context.Context, s *scope, st *appliedState) error {
	var drifted []inventory.ID
	for _, id := range st.ids {
		if r.hasDrifted(ctx, s.as, id, r.mem.object(st, id)) {
			drifted = append(drifted, id)
		}
	}
	if s.installErr == nil {
		s.installed = &installResult{objects: len(st.ids)}
		s.warnings = st.warnings
		s.keptCRDs = st.kept
	}
	s.report(st.bundle).objects = len(st.ids)
	if len(drifted) == 0 && !r.certsDue(s) {
		return nil
	}
	p := r.planDigest(ctx, s, revisionRef{bundle: st.bundle, spec: st.spec, digest: st.digest, config: st.config, values: st.values}, renderAndStore)
	if p.err != nil {
		return fmt.Errorf("rendering revision %s to correct drift: %w", st.bundle, p.err)
	}
	plan := p.plan
	// Applied before, so past the preflight: a render made again (the
	// stored one was lost) is stored.
	if err := r.storePending(ctx, s, p); err != nil {
		return err
	}
	if drifted = r.withRerendered(st, plan, drifted); len(drifted) == 0 {
		return nil
	}
	cs, err := s.as.engine.Apply(ctx, plan.Subset(drifted), apply.ApplyOptions{})
	if err != nil {
		return fmt.Errorf("correcting drift of revision %s: %w", st.bundle, applyFailure(err))
	}
	restored := r.mem.reapplied(st, cs)
	// Changes that did not touch what the bundle sets (status, fields
	// other managers own) need no event.
	if len(restored) > 0 {
		metrics.DriftCorrectionsTotal.WithLabelValues(metrics.Class(s.bd.Spec.ProvisionerClassName)).Add(float64(len(restored)))
		r.Recorder.Eventf(s.bd, nil, corev1.EventTypeNormal, "DriftCorrected", "Install",
			"Restored %d object(s) changed or deleted outside rukpak, e.g. %s", len(restored), restored[0])
	}
	// The records follow, so that a restarted manager finds the corrected
	// objects as applied and writes nothing.
	return r.recordCorrected(ctx, s, st)
}

// recordCorrected saves the records of st's objects after a drift
// correction. The inventory keeps what it lists beyond st's objects — a
// prune not done yet, the objects a newer revision wrote before it
// failed — so that they are still pruned by the next apply, or at
// uninstall, with the records it has of them.
func (r *Reconciler) recordCorrected(ctx context.Context, s *scope, st *appliedState) error {
	owner := inventoryOf(s.bd)
	ids, err := r.inv.Load(ctx, owner)
	if err != nil {
		return fmt.Errorf("loading inventory: %w", err)
	}
	recs, err := r.inv.Records(ctx, owner)
	if err != nil {
		return fmt.Errorf("loading inventory: %w", err)
	}
	if recs == nil {
		recs = map[inventory.ID]inventory.Record{}
	}
	maps.Copy(recs, r.mem.records(st))
	if err := r.inv.SaveApplied(ctx, owner, union(st.ids, ids), recs); err != nil {
		return fmt.Errorf("saving inventory: %w", err)
	}
	return nil
}

// hasDrifted reports whether the object differs from what was applied
// and needs applying again. A finished Job that removed itself (see
// apply.Entry.RunOnce) does not: it ran for this revision.
func (r *Reconciler) hasDrifted(ctx context.Context, as *actor, id inventory.ID, a appliedObject) bool {
	if a.hook || a.kept {
		// A kept CRD is the newer definition on purpose (keepCRDs).
		// Run once for its revision, by Helm's rules; what became of it
		// since (deleted by its policy, edited) is not rukpak's to undo.
		return false
	}
	return needsApply(a, r.driftOf(ctx, as, id, a))
}

// needsApply reports whether an applied object a, in state d since, is
// to be applied again: changed, or gone unless it ran once (a finished
// Job that removed itself).
func needsApply(a appliedObject, d driftState) bool {
	switch d {
	case asApplied:
		return false
	case gone:
		return !(a.runOnce && a.rv != "")
	}
	return true
}

// watchedObjects are the drift watches of managed objects
// (objectwatch.Watcher).
type watchedObjects interface {
	// Get is what the watches show of an object: ok is false when no
	// watch has the object's kind synced for its identity.
	Get(key objectwatch.Key, namespace, name string) (obj *metav1.PartialObjectMetadata, ok bool)
	// Ensure makes the watches of a BundleDeployment's objects exactly
	// keys.
	Ensure(owner string, keys []objectwatch.Key) error
	// Await adds keys to a BundleDeployment's watches and waits until
	// Get answers for each (synced, or refused: never), or ctx is done.
	Await(ctx context.Context, owner string, keys []objectwatch.Key) error
}

var _ watchedObjects = (*objectwatch.Watcher)(nil)

// driftState is what became of an applied object.
type driftState int

const (
	// asApplied: nothing the bundle sets changed since the apply.
	asApplied driftState = iota
	// changed: someone changed what the bundle sets.
	changed
	// gone: the object was deleted, or is being deleted.
	gone
)

// driftOf tells what became of the object since a was applied. The cache
// may lag behind a write just made, so a difference it shows is confirmed
// against the API server.
func (r *Reconciler) driftOf(ctx context.Context, as *actor, id inventory.ID, a appliedObject) driftState {
	if a.rv == "" {
		return changed
	}
	if seen, ok := r.watched.Get(watchKey(as.id, id, a.resource), id.Namespace, id.Name); ok && !a.drifted(seen) {
		return asApplied
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(id.GroupVersionKind())
	err := as.engine.Reader().Get(ctx, client.ObjectKey{Namespace: id.Namespace, Name: id.Name}, obj)
	switch {
	case apierrors.IsNotFound(err):
		return gone
	case err != nil || !a.drifted(obj):
		return asApplied
	case !obj.GetDeletionTimestamp().IsZero():
		return gone
	}
	return changed
}
