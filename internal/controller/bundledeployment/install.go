package bundledeployment

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/failure"
	"github.com/rukpak/rukpak/internal/inventory"
	"github.com/rukpak/rukpak/internal/provisioner"
)

// appliedState is what this process last applied for one BundleDeployment:
// the revision and what each object looked like right after the apply.
type appliedState struct {
	bundle  string
	digest  string
	ids     []inventory.ID
	objects map[inventory.ID]appliedObject
	// failed is the newest revision when it failed terminally: it is not
	// retried until the spec or its content changes.
	failed       string
	failedDigest string
	failedErr    error
	// values are the Helm values the revision was rendered with, so that
	// drift is corrected to exactly what was applied.
	values map[string]any
}

// installResult summarises an install for status and events.
type installResult struct {
	objects                                 int
	created, configured, unchanged, deleted int
}

// install applies the revision, or corrects drift if it is applied already.
func (r *Reconciler) install(ctx context.Context, s *scope) (bool, error) {
	st := r.state(s.bd.Name)
	if st != nil && st.bundle == s.revision && st.digest == s.digest {
		return true, r.correctDrift(ctx, s, st)
	}
	if st != nil && st.failed == s.revision && st.failedDigest == s.digest {
		s.installErr = st.failedErr
		if st.bundle != "" {
			return false, r.correctDrift(ctx, s, st)
		}
		return false, nil
	}

	plan, err := r.plan(ctx, s.bd, s.bundle.Name, s.digest, s.prov, s.values.Values)
	if err != nil {
		return false, r.installFailed(s, st, err)
	}
	if err := r.Engine.EnsureNamespace(ctx, s.bd.Spec.InstallNamespace); err != nil {
		return false, r.installFailed(s, st, fmt.Errorf("creating install namespace: %w", err))
	}
	old, err := r.Inventory.Load(ctx, s.bd.Name)
	if err != nil {
		return false, r.installFailed(s, st, fmt.Errorf("loading inventory: %w", err))
	}
	ids := plan.IDs()
	// Record the union first, so objects of a revision that fails half-way
	// are still known and pruned later.
	if len(inventory.Stale(ids, old)) > 0 {
		if err := r.Inventory.Save(ctx, s.bd.Name, union(old, ids)); err != nil {
			return false, r.installFailed(s, st, fmt.Errorf("saving inventory: %w", err))
		}
	}
	cs, err := r.Engine.Apply(ctx, plan.WithCollisions(r.collisions(s, st)))
	if err != nil {
		return false, r.installFailed(s, st, err)
	}
	next := &appliedState{bundle: s.bundle.Name, digest: s.digest, ids: ids, objects: make(map[inventory.ID]appliedObject, len(ids)), values: s.values.Values}
	res := &installResult{objects: len(ids)}
	for _, c := range cs.Entries {
		next.objects[c.ID] = appliedFrom(c)
		countChange(res, c.Action)
	}
	r.setState(s.bd.Name, next)
	if err := r.drift.ensure(ctx, ids); err != nil {
		return false, fmt.Errorf("watching managed objects: %w", err)
	}

	stale := inventory.Stale(old, ids)
	var pcs *apply.ChangeSet
	if len(stale) > 0 {
		pcs, err = r.Engine.Prune(ctx, s.bd.Name, stale, apply.PruneOptions{DeleteCRDs: deleteCRDs(s.bd), Keep: r.claimedByOther(s.bd.Name)})
		if err != nil {
			s.installErr = fmt.Errorf("pruning objects revision %s no longer has: %w", s.bundle.Name, err)
			return false, s.installErr
		}
		for _, c := range pcs.Entries {
			countChange(res, c.Action)
		}
	}
	if err := r.Inventory.Save(ctx, s.bd.Name, ids); err != nil {
		return false, fmt.Errorf("saving inventory: %w", err)
	}
	r.handOver(pcs, s.bd.Name)
	if s.bd.Status.ActiveBundle != s.bundle.Name || res.created+res.configured+res.deleted > 0 {
		r.Recorder.Eventf(s.bd, nil, corev1.EventTypeNormal, v1alpha2.ReasonInstalled, "Install",
			"Installed revision %s: %d objects (%d created, %d configured, %d unchanged, %d pruned)",
			s.bundle.Name, res.objects, res.created, res.configured, res.unchanged, res.deleted)
	}
	s.installed = res
	s.bd.Status.ActiveBundle = s.bundle.Name
	s.bd.Status.InstalledObjects = int32(len(ids))
	return true, nil
}

// installFailed records a failed install. A terminal failure is remembered
// so it is not retried until the spec or content changes; the previous
// revision stays in place either way.
func (r *Reconciler) installFailed(s *scope, st *appliedState, err error) error {
	s.installErr = err
	if failure.As(err) == nil {
		return err
	}
	next := &appliedState{}
	if st != nil {
		cp := *st
		next = &cp
	}
	next.failed, next.failedDigest, next.failedErr = s.revision, s.digest, err
	r.setState(s.bd.Name, next)
	r.Recorder.Eventf(s.bd, nil, corev1.EventTypeWarning, failure.Reason(err, v1alpha2.ReasonApplyFailed), "Install",
		"Revision %s not installed: %v", s.revision, err)
	return nil
}

// plan renders the revision's content, with its Helm values, into an apply
// plan.
func (r *Reconciler) plan(ctx context.Context, bd *v1alpha2.BundleDeployment, revision, digest string, prov provisioner.Provisioner, vals map[string]any) (*apply.Plan, error) {
	fsys, err := r.Unpacker.Store().FS(digest)
	if err != nil {
		return nil, fmt.Errorf("opening content %s: %w", digest, err)
	}
	cfg, err := prov.FormatConfig(bd.Name, bd.Spec.InstallNamespace, bd.Spec.Config, vals, r.Cluster)
	if err != nil {
		return nil, err
	}
	objs, err := prov.Format.Objects(ctx, fsys, cfg)
	if err != nil {
		return nil, err
	}
	return r.Engine.Prepare(objs, bd.Spec.InstallNamespace, apply.Owner{Name: bd.Name, Revision: revision})
}

// correctDrift re-applies objects of the applied revision that were deleted
// or changed by someone else.
func (r *Reconciler) correctDrift(ctx context.Context, s *scope, st *appliedState) error {
	var drifted []inventory.ID
	for _, id := range st.ids {
		if r.hasDrifted(ctx, id, st.object(&r.mu, id)) {
			drifted = append(drifted, id)
		}
	}
	if s.installErr == nil {
		s.installed = &installResult{objects: len(st.ids)}
	}
	if len(drifted) == 0 {
		return nil
	}
	plan, err := r.plan(ctx, s.bd, st.bundle, st.digest, s.prov, st.values)
	if err != nil {
		return fmt.Errorf("rendering revision %s to correct drift: %w", st.bundle, err)
	}
	cs, err := r.Engine.Apply(ctx, plan.Subset(drifted))
	if err != nil {
		return fmt.Errorf("correcting drift of revision %s: %w", st.bundle, err)
	}
	var restored []inventory.ID
	r.mu.Lock()
	for _, c := range cs.Entries {
		st.objects[c.ID] = appliedFrom(c)
		if c.Action == apply.Created || c.Action == apply.Configured {
			restored = append(restored, c.ID)
		}
	}
	r.mu.Unlock()
	// Changes that did not touch what the bundle sets (status, fields
	// other managers own) need no event.
	if len(restored) > 0 {
		r.Recorder.Eventf(s.bd, nil, corev1.EventTypeNormal, "DriftCorrected", "Install",
			"Restored %d object(s) changed or deleted outside rukpak, e.g. %s", len(restored), restored[0])
	}
	return nil
}

// hasDrifted reports whether the object differs from what was applied. The
// cache may lag behind a write just made, so a difference it shows is
// confirmed against the API server.
func (r *Reconciler) hasDrifted(ctx context.Context, id inventory.ID, a appliedObject) bool {
	if a.rv == "" {
		return true
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(schema.GroupVersionKind{Group: id.Group, Version: id.Version, Kind: id.Kind})
	key := client.ObjectKey{Namespace: id.Namespace, Name: id.Name}
	if err := r.ObjectCache.Get(ctx, key, obj); err == nil && !a.drifted(obj) {
		return false
	}
	err := r.Live.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		return true
	}
	return err == nil && a.drifted(obj)
}

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

func (r *Reconciler) state(name string) *appliedState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.applied[name]
}

func (r *Reconciler) setState(name string, st *appliedState) {
	r.mu.Lock()
	r.applied[name] = st
	r.mu.Unlock()
}

func (r *Reconciler) forget(name string) {
	r.mu.Lock()
	delete(r.applied, name)
	r.mu.Unlock()
}

// isUnchanged reports whether a managed object's event shows no drift: the
// echo of this process's own apply, or a change only to what others own
// (status, their fields), which needs no reconcile.
func (r *Reconciler) isUnchanged(gvk schema.GroupVersionKind, obj client.Object) bool {
	owner := obj.GetLabels()[v1alpha2.LabelOwnerName]
	id := inventory.ID{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.applied[owner]
	if st == nil {
		return false
	}
	a, ok := st.objects[id]
	return ok && !a.drifted(obj)
}
