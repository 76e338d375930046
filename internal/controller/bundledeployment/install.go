package bundledeployment

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/inventory"
	"github.com/rukpak/rukpak/internal/metrics"
	"github.com/rukpak/rukpak/internal/ownership"
	"github.com/rukpak/rukpak/internal/planner"
	"github.com/rukpak/rukpak/internal/values"
	"github.com/rukpak/rukpak/pkg/failure"
)

// appliedState is what this process last applied for one BundleDeployment:
// the revision and what each object looked like right after the apply.
type appliedState struct {
	// uid is the BundleDeployment's UID.
	uid    types.UID
	bundle string
	// spec is the revision's ownership.SpecDigest, digest its content's:
	// the revision applied is the one with these, whatever its name.
	spec    string
	digest  string
	ids     []inventory.ID
	objects map[inventory.ID]appliedObject
	// config and values are the spec.config and Helm values the revision
	// was rendered with, so that drift is corrected to exactly what was
	// applied.
	config *v1alpha2.BundleConfig
	values values.Resolved
	// skipped are optional objects left out because their kind was not
	// served; the revision is applied again once one is.
	skipped []inventory.ID
	// warnings are what the API server warned about when it was applied.
	warnings []string
	// kept are the CRDs a rollback left at their newer definition
	// (keptCRD.String), for the Installed message.
	kept []string
	// unfinished is set while the apply that made this state has not
	// pruned what the revision no longer has and recorded the rest: an
	// apply stopped after its writes (an error, a cancelled turn) leaves
	// the inventory listing objects still to prune. Such a revision is
	// applied again, not left as it is (appliedAsIs).
	unfinished bool
}

// appliedAsIs reports whether st is revision ref's applied state with
// nothing left to do but correct its drift: the same content (spec and
// content digest), and its apply finished.
func (st *appliedState) appliedAsIs(bundle, spec, digest string) bool {
	return st != nil && !st.unfinished && st.bundle == bundle && st.spec == spec && st.digest == digest
}

// installResult summarises an install for status and events.
type installResult struct {
	objects                                 int
	created, configured, unchanged, deleted int
	// skipped are optional objects whose kind is not served.
	skipped []inventory.ID
}

// revisionRef names the content of one revision to apply.
type revisionRef struct {
	bundle string
	// spec is the revision's ownership.SpecDigest, in full.
	spec   string
	digest string
	config *v1alpha2.BundleConfig
	values values.Resolved
	// upgrade is set for a new revision (not a rollback or a re-apply of
	// the active one): its CRD changes are checked.
	upgrade bool
	// rollback is set for an earlier revision applied again through the
	// spec (rukpakctl rollback): upgrade is set too (its hooks are an
	// upgrade's), but its CRDs are judged as a rollback's (keepCRDs).
	rollback bool
	// number is the revision's number when its Bundle is about to be
	// created (see render); 0 when the Bundle exists and carries it.
	number int
	// version is the version the revision's sources selected, when it
	// is an earlier revision read from its Bundle (revisionOf).
	version string
}

// install applies the revision, or corrects drift if it is applied already.
// A revision that failed (status.failedBundle) is not tried again until the
// spec names another one or the retry annotation changes; meanwhile the
// active revision is the corrected revision.
func (r *Reconciler) install(ctx context.Context, s *scope) (bool, error) {
	// The active revision is what this process applied last, if it
	// applied any (observe).
	st := s.mem.applied
	if marked, why := markedFailed(s); marked {
		s.markedFailed = true
		if why != nil {
			// Why it failed, when this process knows (after a restart
			// the status keeps saying it).
			s.installErr = why
		}
		active := s.facts.active
		if active == "" {
			return false, nil
		}
		known := st != nil && st.bundle == active
		if known && !st.unfinished {
			s.leaveAsApplied(st)
			return false, nil
		}
		if active == s.revision && !known {
			return false, nil // applied by an earlier process; nothing known to correct yet
		}
		// This process has not applied the active revision yet (it
		// restarted), or its apply stopped before its prune: apply it
		// again to know its objects, and to prune.
		ref, err := r.revisionOf(ctx, s, active)
		if failure.As(err) != nil {
			s.installErr = err
			s.requeueWithin(notOwnedRecheck)
			return false, nil
		}
		if err != nil {
			return false, err
		}
		res, err := r.applyRevision(ctx, s, st, ref)
		s.recordApplied(res)
		return false, err
	}

	if st.appliedAsIs(s.revision, s.specDigest, s.digest) && !r.skippedNowServed(s, st) {
		s.leaveAsApplied(st)
		return true, nil
	}
	if err := r.checkProbes(s.bd); err != nil {
		// A probe that cannot run (too expensive, or invalid) would only
		// fail the revision after its objects are applied: refuse first.
		// The spec must change; what is installed stays corrected.
		return false, s.refused(err)
	}
	earlier, err := r.isEarlierRevision(ctx, s)
	if err != nil {
		return false, err
	}
	// The active revision applied again (after a restart) may be a
	// rollback that kept CRDs: judged as one, so that its kept CRDs are
	// not taken for an unsafe upgrade.
	again := s.bundle.Name == s.facts.active
	ref := revisionRef{bundle: s.bundle.Name, spec: s.specDigest, digest: s.digest, config: s.bd.Spec.Config, values: s.values, upgrade: true, rollback: earlier || again}
	v, err := r.gate(ctx, s, st, ref)
	if v.held || err != nil {
		// A held revision's render is let go of.
		s.rendered = nil
		return false, err
	}
	if v.render != nil {
		s.rendered, s.preflighted = v.render, v.preflighted
	}
	applied, err := r.applyRevision(ctx, s, st, ref)
	s.recordApplied(applied)
	r.reportUnreviewed(s, err)
	if err != nil {
		return false, r.installFailed(ctx, s, err)
	}
	res := applied.changes
	if installedEvent(s.facts.active, s.bundle.Name, res) {
		r.Recorder.Eventf(s.bd, nil, corev1.EventTypeNormal, v1alpha2.ReasonInstalled, "Install",
			"Installed revision %s: %d objects (%d created, %d configured, %d unchanged, %d pruned)",
			s.bundle.Name, res.objects, res.created, res.configured, res.unchanged, res.deleted)
	}
	if s.facts.active != s.bundle.Name {
		op := metrics.OperationUpgrade
		if s.facts.active == "" {
			op = metrics.OperationInstall
		}
		metrics.RevisionsTotal.WithLabelValues(metrics.Class(s.bd.Spec.ProvisionerClassName), op).Inc()
		s.rolloutStarted = true
		s.upgraded = &versionChange{from: s.facts.installedVersion, to: s.facts.newestVersion}
		s.report(s.bundle.Name).installed = true
	}
	s.installed = res
	s.facts.skipped = objectRefs(res.skipped)
	if len(res.skipped) > 0 {
		s.requeueWithin(optionalRecheck)
	}
	s.facts.activated(s.bundle.Name, res.objects, s.facts.newestVersion)
	if s.facts.failed.bundle == s.bundle.Name {
		// Retried and installed: judged by health from here on.
		r.clearFailed(s)
	}
	return true, nil
}

// skippedNowServed reports whether an optional object the applied
// revision left out can be applied now; while some are left out, the
// reconcile comes back to look.
func (r *Reconciler) skippedNowServed(s *scope, st *appliedState) bool {
	for _, id := range st.skipped {
		if r.kinds.Serves(id) {
			return true
		}
	}
	if len(st.skipped) > 0 {
		s.requeueWithin(optionalRecheck)
	}
	return false
}

// handOffRecheck is how often a revision waiting for objects another
// BundleDeployment manages tries again.
const handOffRecheck = 10 * time.Second

// maxSkippedReported bounds status.skippedObjects.
const maxSkippedReported = 64

// maxKeptReported bounds status.keptCRDs.
const maxKeptReported = 64

// optionalRecheck is how often a revision with skipped optional objects
// looks whether their kinds are served now.
const optionalRecheck = 15 * time.Second

// objectRefs turns ids into status object references.
func objectRefs(ids []inventory.ID) []v1alpha2.ObjectReference {
	var out []v1alpha2.ObjectReference
	for _, id := range ids[:min(len(ids), maxSkippedReported)] {
		out = append(out, v1alpha2.ObjectReference{Group: id.Group, Version: id.Version, Kind: id.Kind, Namespace: id.Namespace, Name: id.Name})
	}
	return out
}

// earlierRevisionIDs returns what the BundleDeployment's revisions other
// than current hold, for a BundleDeployment that has recorded nothing:
// usually there are none (a first install), but an install that was
// stopped before it recorded its objects (the manager killed half-way)
// and then replaced by a new revision left its Bundle, and the objects it
// wrote must be pruned like those of any revision. A revision that can no
// longer be rendered is reported in an event and left out: its objects, if
// any, stay in place, labelled as this BundleDeployment's. Only the
// maxEarlierRevisions newest are read: the spec can name a new revision
// many times while nothing is installed (each refused by the preflight,
// say), and rendering them all would cost the manager that many renders.
func (r *Reconciler) earlierRevisionIDs(ctx context.Context, s *scope, current string) ([]inventory.ID, error) {
	bundles, err := r.bundlesLabelled(ctx, s.bd.Name)
	if err != nil {
		return nil, err
	}
	var earlier []*v1alpha2.Bundle
	for i := range bundles {
		if b := &bundles[i]; b.Name != current && ownership.Controlled(s.bd, b) {
			earlier = append(earlier, b)
		}
	}
	slices.SortFunc(earlier, func(a, b *v1alpha2.Bundle) int {
		return cmp.Or(b.CreationTimestamp.Compare(a.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
	})
	var ids []inventory.ID
	for _, b := range earlier[:min(len(earlier), maxEarlierRevisions)] {
		ref, err := r.revisionOf(ctx, s, b.Name)
		if err == nil {
			var plan *apply.Plan
			if plan, err = r.plan(ctx, s, ref, renderOnly); err == nil {
				ids = union(ids, plan.IDs())
				continue
			}
		}
		r.Recorder.Eventf(s.bd, nil, corev1.EventTypeWarning, v1alpha2.ReasonInventoryIncomplete, "Install",
			"revision %s was never recorded as installed and cannot be read to prune what it may have written: %v", b.Name, err)
	}
	return ids, nil
}

// maxEarlierRevisions bounds the earlier revisions earlierRevisionIDs
// reads.
const maxEarlierRevisions = 5

// hookRun is which hooks applying ref over the active revision runs:
// install hooks while nothing is installed, upgrade hooks for a new
// revision over an installed one, and none when a revision is applied
// again (the active one after a restart, or the last healthy one for a
// rollback).
func hookRun(active string, ref revisionRef) apply.HookRun {
	switch {
	case ref.bundle == active:
		return apply.HooksNone
	case active == "":
		return apply.HooksInstall
	case ref.upgrade:
		return apply.HooksUpgrade
	}
	return apply.HooksNone
}

// unchangedSinceApplied returns the entries that are exactly as applied
// before, by ID: applied with the same configuration (by what this
// process applied last, else by the inventory's records) and not changed
// since (the same generation, or resourceVersion for kinds without one,
// and the labels and annotations the bundle sets). Reading is all it
// does: the watch cache, else the API server. After a restart, or for a
// kind none of the manager's watches covered yet, it first waits (at most
// watchSyncWait) for the watches of those objects to list them, so that
// it does not read each object from the API server.
func (r *Reconciler) unchangedSinceApplied(ctx context.Context, s *scope, st *appliedState, recs map[inventory.ID]inventory.Record, entries []apply.Entry) map[inventory.ID]appliedObject {
	before := appliedBefore(r.mem, st, recs, entries)
	if len(before) == 0 {
		return nil
	}
	r.awaitWatches(ctx, s, before)
	same := map[inventory.ID]appliedObject{}
	for id, a := range before {
		if !r.hasDrifted(ctx, s.as, id, a) {
			same[id] = a
		}
	}
	return same
}

// appliedBefore are the objects of entries applied before with the same
// configuration: by what this process applied last (st), else by the
// inventory's records.
func appliedBefore(mem *memory, st *appliedState, recs map[inventory.ID]inventory.Record, entries []apply.Entry) map[inventory.ID]appliedObject {
	out := map[inventory.ID]appliedObject{}
	for _, e := range entries {
		var a appliedObject
		if st != nil {
			a = mem.object(st, e.ID)
		}
		if a.hash != e.Hash {
			rec, ok := recs[e.ID.Key()]
			if !ok || rec.Hash != e.Hash {
				continue
			}
			a = recorded(e, rec)
		}
		out[e.ID] = a
	}
	return out
}

// watchSyncWait bounds how long a reconcile waits for the watches of the
// objects it verifies to list them; past it, it reads the objects from
// the API server.
const watchSyncWait = 10 * time.Second

// awaitWatches joins and waits for the drift watches of objects (those
// whose drift is judged at all: not hooks, not kept CRDs).
func (r *Reconciler) awaitWatches(ctx context.Context, s *scope, objects map[inventory.ID]appliedObject) {
	var res []apply.Resource
	for id, a := range objects {
		if !a.hook && !a.kept && a.rv != "" {
			res = append(res, apply.Resource{ID: id, Resource: a.resource})
		}
	}
	if len(res) == 0 {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, watchSyncWait)
	defer cancel()
	// Not synced in time, or refused: the objects are read from the API
	// server instead (driftOf), so the error changes nothing.
	_ = r.watched.Await(wctx, s.bd.Name, watchKeys(s.as.id, res))
}

// installedEvent tells whether applying revision bundle, with the
// BundleDeployment's active revision active before it, is worth an
// Installed event: an upgrade or rollback (another revision became
// active), or the active revision applied again with changes. A first
// install is not: its status says all the event would (Installed=True,
// the revision and its object count), and the event would be one more
// write per BundleDeployment created.
func installedEvent(active, bundle string, res *installResult) bool {
	if active == "" {
		return false
	}
	return active != bundle || res.created+res.configured+res.deleted > 0
}

// without returns ids less those in drop.
func without(ids []inventory.ID, drop map[inventory.ID]appliedObject) []inventory.ID {
	out := make([]inventory.ID, 0, len(ids))
	for _, id := range ids {
		if _, ok := drop[id]; !ok {
			out = append(out, id)
		}
	}
	return out
}

// records are the inventory records of applied objects.
func records(objects map[inventory.ID]appliedObject) map[inventory.ID]inventory.Record {
	out := make(map[inventory.ID]inventory.Record, len(objects))
	for id, a := range objects {
		if a.hash != "" && a.rv != "" {
			out[id.Key()] = a.record()
		}
	}
	return out
}

// plan renders the revision's content, with its config and Helm values,
// and makes it an apply plan through package planner's pipeline (see
// render for when a stored render is used).
func (r *Reconciler) plan(ctx context.Context, s *scope, ref revisionRef, mode renderMode) (*apply.Plan, error) {
	p := r.planDigest(ctx, s, ref, mode)
	return p.plan, p.err
}

// planDigest is plan, with the digest of the objects as rendered
// (ownership.ObjectsDigest), before serving certificates are filled in
// (they are renewed; what the bundle says is not): what an approval of
// the revision binds to, with its spec and content digests; and the
// render to store once the revision passes the permission preflight
// (rendered.pending). Its err says why it could not be made.
func (r *Reconciler) planDigest(ctx context.Context, s *scope, ref revisionRef, mode renderMode) *rendered {
	p := &rendered{bundle: ref.bundle, spec: ref.spec, digest: ref.digest}
	out, err := r.renderer.Render(ctx, s, ref, mode)
	if err != nil {
		p.err = err
		return p
	}
	contents := make([]map[string]any, len(out.objects))
	for i, o := range out.objects {
		contents[i] = o.Object
	}
	if p.objects, p.err = ownership.ObjectsDigest(contents); p.err != nil {
		return p
	}
	bd := s.bd
	plan, err := r.pipeline.Plan(ctx, planner.Revision{
		Objects: out.objects, Owner: apply.Owner{Name: bd.Name, Revision: ref.bundle, UID: bd.UID},
		InstallNamespace: bd.Spec.InstallNamespace, DriftIgnore: bd.Spec.DriftIgnore, Certs: r.certs(bd),
	})
	if err != nil {
		p.objects, p.err = "", applyFailure(err)
		return p
	}
	p.plan, p.pending = plan, out.pending
	return p
}

// planPipeline makes a revision's rendered objects an apply plan: package
// planner's pipeline (serving certificates, apply.Engine.Prepare, drift
// ignore rules).
type planPipeline interface {
	Plan(ctx context.Context, rev planner.Revision) (*apply.Plan, error)
}

// enginePipeline is package planner's pipeline over an apply engine.
type enginePipeline struct{ preparer planner.Preparer }

var _ planPipeline = enginePipeline{}

// Plan implements planPipeline.
func (p enginePipeline) Plan(ctx context.Context, rev planner.Revision) (*apply.Plan, error) {
	return planner.Plan(ctx, p.preparer, rev)
}

// countChange counts an action of the apply or the prune in res.
func countChange(res *installResult, a apply.Action) {
	switch a {
	case apply.Created:
		res.created++
	case apply.Configured:
		res.configured++
	case apply.Unchanged:
		res.unchanged++
	case apply.Deleted:
		res.deleted++
	}
}

func union(a, b []inventory.ID) []inventory.ID {
	out := append([]inventory.ID{}, a...)
	return append(out, inventory.Stale(b, a)...)
}

func deleteCRDs(bd *v1alpha2.BundleDeployment) bool {
	return bd.Spec.DeletionPolicy != nil && bd.Spec.DeletionPolicy.CRDs == v1alpha2.CRDDeletionPolicyDelete
}

// forgetOtherUID forgets what this process knows of a BundleDeployment of
// bd's name that had another UID (deleted, and created again before this
// process saw it gone): nothing it applied is bd's.
func (r *Reconciler) forgetOtherUID(bd *v1alpha2.BundleDeployment) {
	if r.mem.otherUID(bd.Name, bd.UID) {
		r.forget(bd.Name)
	}
}

func (r *Reconciler) forget(name string) {
	if r.watches != nil {
		r.watches.Release(name)
	}
	if id, unused := r.mem.forget(name); unused {
		r.Identities.Forget(id)
	}
	r.sched.Forget(name)
	r.servingCerts().forget(name)
	if r.Adopter != nil {
		r.Adopter.Forget(name)
	}
}

// isUnchanged reports whether a managed object's event shows no drift: the
// echo of this process's own apply, or a change only to what others own
// (status, their fields), which needs no reconcile.
func (r *Reconciler) isUnchanged(gvk schema.GroupVersionKind, obj client.Object) bool {
	owner, id := ownerAndID(gvk, obj)
	a, ok := r.mem.appliedObject(owner, id)
	return ok && !a.drifted(obj)
}

// isApplied reports whether the owner an event's object names (its
// owner label) applied it, or may have (package schedule queues its drift
// ahead of other work only then): whoever may label objects can name any
// BundleDeployment, and must not put another team's reconciles ahead of
// that team's own work.
func (r *Reconciler) isApplied(gvk schema.GroupVersionKind, obj client.Object) bool {
	owner, id := ownerAndID(gvk, obj)
	return r.mem.mayHaveApplied(owner, id)
}

// ownerAndID returns the BundleDeployment obj's owner label names, and
// obj's inventory ID.
func ownerAndID(gvk schema.GroupVersionKind, obj client.Object) (string, inventory.ID) {
	return obj.GetLabels()[v1alpha2.LabelOwnerName],
		inventory.ID{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// checkProbes compiles bd's health probes (through the cache checkHealth
// uses) and returns a failure naming the probe when one is refused: its
// estimated cost is over the limit, or it does not compile.
func (r *Reconciler) checkProbes(bd *v1alpha2.BundleDeployment) error {
	if bd.Spec.HealthChecks == nil || len(bd.Spec.HealthChecks.Probes) == 0 {
		return nil
	}
	if _, err := r.healthCache.Checker(bd.Spec.HealthChecks.Probes); err != nil {
		if failure.As(err) != nil {
			return fmt.Errorf("spec.healthChecks: %w", err)
		}
		return failure.New(v1alpha2.ReasonInvalidConfig, "spec.healthChecks: %v", err)
	}
	return nil
}
