package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/internal/inventory"
)

// Preview is one object of a plan as DryRun finds it: as it is, and as
// Apply would leave it.
type Preview struct {
	// ID names the object.
	ID inventory.ID
	// Live is the object as it is; nil when it does not exist.
	Live *unstructured.Unstructured
	// Merged is the object as Apply would leave it: the API server's
	// answer to a server-side apply dry-run, or, when NotDryRun says why
	// there could be none, the plan's object as Apply would send it.
	Merged *unstructured.Unstructured
	// NotDryRun, when set, says why Merged is not the answer of a
	// dry-run.
	NotDryRun string
	// Hook is set for a Helm hook that Apply runs (see ApplyOptions.Hooks).
	Hook bool
	// RunOnce is set for a Job that removes itself once it finished (see
	// Entry.RunOnce).
	RunOnce bool
}

// DryRun server-side applies every object of p as a dry-run (DryRun: All),
// as Apply would write it — the engine's field manager, conflicts forced,
// fields other controllers own as the live object holds them — and
// returns, in p's order, each object as it is and as the API server says
// it would be. Hooks that Apply would not run with opts (see
// ApplyOptions.Hooks, the only option DryRun reads) are left out, as
// Apply leaves them. Nothing is written, and p is not changed.
//
// Some objects cannot be dry-run before the apply creates what they need;
// their Merged is the plan's object (not defaulted by the API server) and
// NotDryRun says why: a kind a CRD of the plan defines that the cluster
// does not serve yet, a namespace that does not exist yet (the plan's, or
// the install namespace Apply creates), a binding of a role of the plan
// that does not exist yet, and an object Apply would delete and create
// again because a field that cannot change does (see replaceable). An
// object whose such field changes and may not be replaced fails DryRun
// with CodeImmutable, as it fails Apply.
func (e *Engine) DryRun(ctx context.Context, plan *Plan, opts ApplyOptions) ([]Preview, error) {
	p := newRun(plan, ApplyOptions{Hooks: opts.Hooks})
	missing, err := e.missingNamespaces(ctx, p)
	if err != nil {
		return nil, err
	}
	out := make([]Preview, len(p.items))
	var idx []int
	for i, it := range p.items {
		if runs(it, p.hookRun) {
			idx = append(idx, i)
		}
	}
	var mu sync.Mutex
	var errs []error
	e.each(ctx, idx, func(i int) bool {
		pv, err := e.dryRunOne(ctx, p, p.items[i], missing)
		if err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
			return false
		}
		out[i] = pv
		return true
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	previews := make([]Preview, 0, len(idx))
	for _, i := range idx {
		previews = append(previews, out[i])
	}
	return previews, nil
}

// missingNamespaces returns the namespaces of p's objects that do not
// exist.
func (e *Engine) missingNamespaces(ctx context.Context, p *run) (map[string]bool, error) {
	missing := map[string]bool{}
	seen := map[string]bool{}
	for _, it := range p.items {
		ns := it.id.Namespace
		if ns == "" || seen[ns] {
			continue
		}
		seen[ns] = true
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(namespaceGK.WithVersion("v1"))
		err := e.live().Get(ctx, client.ObjectKey{Name: ns}, obj)
		switch {
		case apierrors.IsNotFound(err):
			missing[ns] = true
		case err != nil:
			return nil, fmt.Errorf("getting namespace %s: %w", ns, err)
		}
	}
	return missing, nil
}

// dryRunOne previews one object (see DryRun).
func (e *Engine) dryRunOne(ctx context.Context, p *run, it item, missingNS map[string]bool) (Preview, error) {
	pv := Preview{ID: it.id, Hook: it.hook != nil, RunOnce: it.runOnce}
	asSent := func(why string) (Preview, error) {
		pv.Merged, pv.NotDryRun = it.obj.DeepCopy(), why
		return pv, nil
	}
	switch {
	case it.needsCRD:
		return asSent(fmt.Sprintf("kind %s is defined by a CustomResourceDefinition of the bundle and not served yet", it.id.GroupVersionKind()))
	case missingNS[it.id.Namespace]:
		return asSent(fmt.Sprintf("namespace %s does not exist yet", it.id.Namespace))
	}
	live, err := e.liveObject(ctx, it.id)
	if err != nil {
		return Preview{}, err
	}
	pv.Live = live
	obj := it.obj
	if live != nil && len(it.ignore) > 0 {
		obj = keepLive(it.obj, live, it.ignore)
	}
	merged := obj.DeepCopy()
	err = e.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(merged),
		client.FieldOwner(e.opts.FieldManager), client.ForceOwnership, client.DryRunAll)
	if err == nil {
		pv.Merged = merged
		return pv, nil
	}
	if e.roleOfPlanMissing(ctx, p, it, err) {
		return asSent("the role it binds is created by the same apply")
	}
	if fields := immutableFields(err); fields != nil {
		if !e.replaceable(it) {
			return Preview{}, newError(CodeImmutable, "%s", e.immutableRefusal(it, fields))
		}
		return asSent(fmt.Sprintf("it is deleted and created again: field(s) %s cannot change", strings.Join(fields, ", ")))
	}
	return Preview{}, fmt.Errorf("dry-run apply of %s: %w", it.id, err)
}

// liveObject reads the whole object id names; nil when it does not exist
// or its kind is not served.
func (e *Engine) liveObject(ctx context.Context, id inventory.ID) (*unstructured.Unstructured, error) {
	return getLive(ctx, e, id, &unstructured.Unstructured{})
}

// Prunable returns, in ids' order, the objects of ids that Prune with the
// same arguments would delete, as they are: those that exist, of a kind
// still served, still labelled as owner's (of opts.OwnerUID) and not
// being deleted already. kept are those it would leave in place instead
// (CRDs without opts.DeleteCRDs, and opts.Keep). Nothing is written.
func (e *Engine) Prunable(ctx context.Context, owner string, ids []inventory.ID, opts PruneOptions) (objs []*unstructured.Unstructured, kept []inventory.ID, err error) {
	for _, id := range ids {
		obj, err := e.liveObject(ctx, id)
		if err != nil {
			return nil, nil, err
		}
		if obj == nil || !e.ownedBy(obj, owner, opts.OwnerUID) || !obj.GetDeletionTimestamp().IsZero() {
			continue
		}
		if (rank(id) == rankCRD && !opts.DeleteCRDs) || (opts.Keep != nil && opts.Keep(id)) {
			kept = append(kept, id)
			continue
		}
		objs = append(objs, obj)
	}
	return objs, kept, nil
}

// Owns reports whether obj is labelled as owner's, of uid when both obj
// and the caller know it (as Prune decides).
func (e *Engine) Owns(obj metav1.Object, owner string, uid types.UID) bool {
	return e.ownedBy(obj, owner, uid)
}
