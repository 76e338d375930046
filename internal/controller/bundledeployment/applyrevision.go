package bundledeployment

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/inventory"
	"github.com/rukpak/rukpak/internal/metrics"
	"github.com/rukpak/rukpak/pkg/failure"
)

// revisionInventory is what applying a revision needs of the inventory
// store (inventory.Store): the objects each BundleDeployment manages and
// their records.
type revisionInventory interface {
	// Records are the records of what was applied, by ID.
	Records(ctx context.Context, owner inventory.Owner) (map[inventory.ID]inventory.Record, error)
	// Load is the IDs the inventory has.
	Load(ctx context.Context, owner inventory.Owner) ([]inventory.ID, error)
	// Save records ids, keeping the records of those it had.
	Save(ctx context.Context, owner inventory.Owner, ids []inventory.ID) error
	// SaveApplied records ids with the records of what was applied.
	SaveApplied(ctx context.Context, owner inventory.Owner, ids []inventory.ID, recs map[inventory.ID]inventory.Record) error
	// Release records the objects a prune left in place for another
	// BundleDeployment to take over, and forgets those applied again.
	Release(ctx context.Context, owner inventory.Owner, kept []inventory.Released, forget []inventory.ID) (int, error)
}

var _ revisionInventory = (*inventory.Store)(nil)

// kindServer tells whether the cluster serves an object's kind
// (apply.Engine.Serves).
type kindServer interface {
	Serves(id inventory.ID) bool
}

var _ kindServer = (*apply.Engine)(nil)

// revisionResult is what applyRevision did with one revision: the caller
// records it in the scope (scope.recordApplied), whether or not the apply
// then failed.
type revisionResult struct {
	// bundle is the revision applied.
	bundle string
	// warnings are what the API server warned about during the apply.
	warnings []string
	// handOffWaits is set when the apply was refused because another
	// BundleDeployment still manages some of its objects (recordClaims).
	handOffWaits bool
	// state is what was applied, to be remembered as the applied state;
	// nil when the apply itself failed.
	state *appliedState
	// changes counts what the apply and the prune did.
	changes *installResult
	// kept are the CRDs a rollback left at their newer definition.
	kept []keptCRD
	// pruned is what the prune deleted, nil when it deleted nothing.
	pruned *apply.ChangeSet
}

// recordApplied records in s what applyRevision did (res may be nil):
// the API server's warnings, the objects of the revision's report, the
// CRDs kept and the applied state.
func (s *scope) recordApplied(res *revisionResult) {
	if res == nil {
		return
	}
	if len(res.warnings) > 0 {
		s.warnings = res.warnings
	}
	if res.handOffWaits {
		s.handOffWaits = true
	}
	if res.state == nil {
		return
	}
	s.report(res.bundle).objects = len(res.state.ids)
	s.keptCRDs = res.state.kept
	s.facts.keep(res.kept)
	s.mem.applied = res.state
}

// applyRevision applies one revision's objects (checking collisions),
// watches them, prunes what the BundleDeployment's inventory has beyond
// them, and returns what it did (revisionResult): the new applied state
// among it. The result is returned with the error when the apply wrote
// something, so that the caller records it either way.
func (r *Reconciler) applyRevision(ctx context.Context, s *scope, st *appliedState, ref revisionRef) (*revisionResult, error) {
	plan, err := r.admittedPlan(ctx, s, ref)
	if err != nil {
		return nil, err
	}
	// Objects exactly as applied before (the same configuration, and not
	// changed since) are neither validated nor written again: after a
	// restart, or when a new revision leaves them as they were.
	recs, err := r.inv.Records(ctx, inventoryOf(s.bd))
	if err != nil {
		return nil, fmt.Errorf("loading inventory: %w", err)
	}
	same := r.unchangedSinceApplied(ctx, s, st, recs, plan.Entries())
	kept, err := r.judgeCRDs(ctx, s, plan, ref, same)
	if err != nil {
		return nil, err
	}
	if s.as.id.IsManager() {
		// A ServiceAccount lives in the install namespace, so it exists;
		// only the manager creates it.
		if err := s.as.engine.EnsureNamespace(ctx, s.bd.Spec.InstallNamespace); err != nil {
			return nil, fmt.Errorf("creating install namespace: %w", err)
		}
	}
	ids := plan.IDs()
	old, recordLater, err := r.recordUnion(ctx, s, ref, ids)
	if err != nil {
		return nil, err
	}
	opts := apply.ApplyOptions{
		Hooks:      hookRun(s.facts.active, ref),
		OnHookWait: func(w apply.HookWait) { r.reportHookWait(ctx, s, ref.bundle, w) },
		Collisions: r.collisions(s, st, recs),
		// A first install has nothing installed to protect, and its
		// objects are in the inventory already; the active revision
		// applied again (after a restart, to correct drift) was validated
		// when it was installed: no dry-run.
		Direct: (len(old) == 0 && s.facts.active == "") || ref.bundle == s.facts.active,
	}
	toApply := plan
	if len(same) > 0 || len(kept) > 0 {
		toApply = plan.Subset(toWrite(ids, same, kept))
	}
	res := &revisionResult{bundle: ref.bundle}
	cs, err := r.applyPlan(ctx, s, res, toApply, opts)
	if err != nil {
		if recordLater && cs != nil {
			// Writes began (a refusal before them returns no change
			// set, and wrote nothing): the objects are known from now
			// on.
			// Even when the apply was stopped (the BundleDeployment
			// changed or is being deleted): what it wrote must be known
			// to be pruned.
			if serr := r.inv.Save(context.WithoutCancel(ctx), inventoryOf(s.bd), ids); serr != nil {
				err = errors.Join(err, fmt.Errorf("saving inventory: %w", serr))
			}
		}
		return res, err
	}
	warnings := res.warnings
	if len(warnings) == 0 {
		warnings = s.warnings
	}
	res.state, res.changes = nextState(s.bd, ref, plan, same, kept, cs, warnings)
	// Until the prune and the records below are done.
	res.state.unfinished = true
	res.kept = kept
	for _, k := range kept {
		r.Recorder.Eventf(s.bd, nil, corev1.EventTypeWarning, v1alpha2.ReasonCRDKept, "Rollback",
			"Revision %s applied without its definition of %s; the newer definition is kept", ref.bundle, k)
	}
	if err := r.watched.Ensure(s.bd.Name, watchKeys(s.as.id, plan.Resources())); err != nil {
		return res, fmt.Errorf("watching managed objects: %w", err)
	}
	if res.pruned, err = r.pruneStale(ctx, s, ref, inventory.Stale(old, ids), recs); err != nil {
		return res, err
	}
	if res.pruned != nil {
		for _, c := range res.pruned.Entries {
			countChange(res.changes, c.Action)
		}
	}
	// Released before the inventory drops them, so that an object is at
	// every moment either in the inventory or released.
	if err := r.release(ctx, s.bd, res.pruned, ids); err != nil {
		return res, err
	}
	if err := r.inv.SaveApplied(ctx, inventoryOf(s.bd), ids, records(res.state.objects)); err != nil {
		return res, fmt.Errorf("saving inventory: %w", err)
	}
	r.handOver(res.pruned, s.bd.Name)
	res.state.unfinished = false
	return res, nil
}

// admittedPlan is the revision's plan (planOf), past the permission
// preflight (unless the gate ran it on this plan already), with its
// render kept once it passed, before anything is written.
func (r *Reconciler) admittedPlan(ctx context.Context, s *scope, ref revisionRef) (*apply.Plan, error) {
	p := r.planOf(ctx, s, ref)
	if p.err != nil {
		return nil, p.err
	}
	if s.preflighted != p.plan {
		if err := r.preflight(ctx, s, p.plan); err != nil {
			return nil, err
		}
	}
	if err := r.storePending(ctx, s, p); err != nil {
		return nil, err
	}
	return p.plan, nil
}

// judgeCRDs checks the CRD changes of a new revision (checkCRDUpgrades),
// or, for a rollback or the active revision applied again, returns the
// CRDs it keeps at their newer definition (keepCRDs). A rollback that
// cannot keep what is stored readable applies nothing (RollbackUnsafe).
func (r *Reconciler) judgeCRDs(ctx context.Context, s *scope, plan *apply.Plan, ref revisionRef, same map[inventory.ID]appliedObject) ([]keptCRD, error) {
	if ref.upgrade && !ref.rollback {
		return nil, r.checkCRDUpgrades(ctx, s, plan, same)
	}
	return r.keepCRDs(ctx, s, plan, ref)
}

// recordUnion returns what the inventory had (old) and saves the union
// of it and ids first, so that objects of a revision that fails half-way
// are still known and pruned later. A first install records its objects
// when it is done, or when it fails (recordLater): until then its Bundle
// (the only one) says what it writes.
func (r *Reconciler) recordUnion(ctx context.Context, s *scope, ref revisionRef, ids []inventory.ID) (old []inventory.ID, recordLater bool, err error) {
	old, err = r.inv.Load(ctx, inventoryOf(s.bd))
	if err != nil {
		return nil, false, fmt.Errorf("loading inventory: %w", err)
	}
	firstInstall := len(old) == 0 && s.facts.active == ""
	if firstInstall {
		// Nothing recorded: a first install, or one whose earlier
		// attempt stopped (the process was killed) before it recorded
		// anything. Those attempts' Bundles say what they may have
		// written.
		if old, err = r.earlierRevisionIDs(ctx, s, ref.bundle); err != nil {
			return nil, false, err
		}
	}
	recordLater = firstInstall && len(old) == 0
	if !recordLater && len(inventory.Stale(ids, old)) > 0 {
		if err := r.inv.Save(ctx, inventoryOf(s.bd), union(old, ids)); err != nil {
			return nil, false, fmt.Errorf("saving inventory: %w", err)
		}
	}
	return old, recordLater, nil
}

// toWrite are the ids of a plan to write: those not exactly as applied
// before (same) nor kept CRDs, which are in ids (the inventory keeps them
// owned, so they are not pruned) but not written.
func toWrite(ids []inventory.ID, same map[inventory.ID]appliedObject, kept []keptCRD) []inventory.ID {
	return without(without(ids, same), keptIDsOf(kept))
}

// keptIDsOf are the inventory IDs of the kept CRDs.
func keptIDsOf(kept []keptCRD) map[inventory.ID]appliedObject {
	out := map[inventory.ID]appliedObject{}
	for _, k := range kept {
		out[crdID(k.name)] = appliedObject{kept: true}
	}
	return out
}

// applyPlan writes plan with opts through the install identity's engine,
// noting in res the API server's warnings (and an event of them) and
// whether the revision waits for a hand-off; the error is the apply's
// failure (applyFailure).
func (r *Reconciler) applyPlan(ctx context.Context, s *scope, res *revisionResult, plan *apply.Plan, opts apply.ApplyOptions) (*apply.ChangeSet, error) {
	applyCtx, warnings := apply.CollectWarnings(ctx)
	began := time.Now()
	cs, err := s.as.engine.Apply(applyCtx, plan, opts)
	res.handOffWaits = r.recordClaims(s.bd.Name, err)
	err = applyFailure(err)
	metrics.Since(metrics.ApplySeconds.WithLabelValues(metrics.Class(s.bd.Spec.ProvisionerClassName), metrics.Result(err)), began)
	res.warnings = warnings()
	r.reportWarnings(s.bd, res.bundle, res.warnings)
	return cs, err
}

// nextState is the applied state after plan of ref was applied (cs) over
// the objects left as they were (same) and the kept CRDs, and the count
// of what the apply did. It reads and writes nothing else.
func nextState(bd *v1alpha2.BundleDeployment, ref revisionRef, plan *apply.Plan, same map[inventory.ID]appliedObject, kept []keptCRD, cs *apply.ChangeSet, warnings []string) (*appliedState, *installResult) {
	ids := plan.IDs()
	next := &appliedState{uid: bd.UID, bundle: ref.bundle, spec: ref.spec, digest: ref.digest, ids: ids, objects: make(map[inventory.ID]appliedObject, len(ids)), config: ref.config, values: ref.values}
	res := &installResult{objects: len(ids), skipped: plan.Skipped()}
	next.skipped = plan.Skipped()
	next.warnings = warnings
	keptIDs := keptIDsOf(kept)
	for _, e := range plan.Entries() {
		if _, ok := keptIDs[e.ID]; ok {
			if _, ok := same[e.ID]; !ok {
				next.objects[e.ID] = appliedObject{resource: e.Resource, kept: true}
			}
		}
	}
	for _, k := range kept {
		next.kept = append(next.kept, k.String())
	}
	for id, a := range same {
		next.objects[id] = a
		countChange(res, apply.Unchanged)
	}
	if cs != nil {
		for _, c := range cs.Entries {
			next.objects[c.ID] = appliedFrom(c)
			countChange(res, c.Action)
		}
	}
	for _, e := range plan.Entries() {
		if _, ok := next.objects[e.ID]; !ok && e.Hook {
			// A hook this run did not write (not of its event): known,
			// never drift.
			next.objects[e.ID] = appliedObject{resource: e.Resource, hash: e.Hash, hook: true}
		}
	}
	return next, res
}

// pruneStale deletes the stale objects (inventoried, no longer in the
// revision ref) as the install identity and returns what it deleted; nil
// when there were none.
func (r *Reconciler) pruneStale(ctx context.Context, s *scope, ref revisionRef, stale []inventory.ID, recs map[inventory.ID]inventory.Record) (*apply.ChangeSet, error) {
	if len(stale) == 0 {
		return nil, nil
	}
	pcs, err := s.as.engine.Prune(ctx, s.bd.Name, stale, apply.PruneOptions{DeleteCRDs: deleteCRDs(s.bd), Keep: r.keeps(s.bd.Name, recs), OwnerUID: s.bd.UID})
	if err != nil {
		return nil, failure.New(v1alpha2.ReasonPruneFailed, "revision %s is applied, but deleting the objects it no longer has failed: %v", ref.bundle, err)
	}
	return pcs, nil
}

// reportWarnings turns the API server's warnings about a revision's
// objects into an event.
func (r *Reconciler) reportWarnings(bd *v1alpha2.BundleDeployment, revision string, warnings []string) {
	if len(warnings) == 0 {
		return
	}
	r.Recorder.Eventf(bd, nil, corev1.EventTypeWarning, "APIWarning", "Install",
		"The API server warned about revision %s: %s", revision, strings.Join(warnings, "; "))
}
