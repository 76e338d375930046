package apply

import (
	"context"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/internal/inventory"
)

// PruneOptions configure Prune.
type PruneOptions struct {
	// DeleteCRDs deletes CRDs (last), which deletes every custom resource
	// of them. Without it CRDs are left in place.
	DeleteCRDs bool
	// Keep, when set, names objects to leave in place rather than delete:
	// another BundleDeployment is waiting to take them over, or the
	// revision that applied them kept them (helm.sh/resource-policy).
	Keep func(id inventory.ID) bool
	// OwnerUID, when set, is the owner's UID: an object whose owner-uid
	// label is another one (a deleted BundleDeployment of the same name)
	// is left in place.
	OwnerUID types.UID
}

// Deletion order: namespaced objects, then cluster-scoped ones, then
// Namespaces (after what is in them), then CRDs.
const (
	rankNamespaced = iota
	rankCluster
	rankNamespace
	rankCRD
	ranks
)

func rank(id inventory.ID) int {
	switch {
	case id.Group == crdGK.Group && id.Kind == crdGK.Kind:
		return rankCRD
	case id.Group == "" && id.Kind == "Namespace":
		return rankNamespace
	case id.Namespace != "":
		return rankNamespaced
	}
	return rankCluster
}

// Prune deletes the objects named by ids that are still labelled as owned
// by owner, in a safe order. Objects that are gone, whose kind is no longer
// served, or that someone else owns now are skipped; those to keep (CRDs
// without DeleteCRDs, and opts.Keep) are read, and reported Kept with their
// UID while they are still the owner's. Objects of kinds another controller
// writes back (see writeBackKinds) are watched after their deletion and
// deleted again when they come back (see settleWriteBacks).
func (e *Engine) Prune(ctx context.Context, owner string, ids []inventory.ID, opts PruneOptions) (*ChangeSet, error) {
	var byRank [ranks][]inventory.ID
	for _, id := range ids {
		byRank[rank(id)] = append(byRank[rank(id)], id)
	}
	cs := &ChangeSet{}
	for r := range byRank {
		group := byRank[r]
		changes := make([]Change, len(group))
		var mu sync.Mutex
		var errs []error
		var gone []deleted
		idx := make([]int, len(group))
		for i := range idx {
			idx[i] = i
		}
		e.each(ctx, idx, func(i int) bool {
			id := group[i]
			var c Change
			var d deleted
			var err error
			if (r == rankCRD && !opts.DeleteCRDs) || (opts.Keep != nil && opts.Keep(id)) {
				c, err = e.keepOne(ctx, owner, opts.OwnerUID, id)
			} else {
				c, d, err = e.deleteOne(ctx, owner, opts.OwnerUID, id)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return true
			}
			changes[i] = c
			if d.uid != "" && writeBackKinds[id.GroupVersionKind().GroupKind()] {
				gone = append(gone, d)
			}
			return true
		})
		for _, c := range changes {
			if c.Action != "" {
				cs.add(c)
			}
		}
		if err := errors.Join(errs...); err != nil {
			return cs, err
		}
		if err := e.settleWriteBacks(ctx, owner, opts.OwnerUID, gone); err != nil {
			return cs, err
		}
		if err := ctx.Err(); err != nil {
			return cs, err
		}
	}
	return cs, nil
}

// ownedBy reports whether obj is still labelled as owner's (of uid, when
// both the caller and the object know it).
func (e *Engine) ownedBy(obj metav1.Object, owner string, uid types.UID) bool {
	l := obj.GetLabels()
	if l[e.opts.Keys.OwnerName] != owner {
		return false
	}
	return uid == "" || l[e.opts.Keys.OwnerUID] == "" || l[e.opts.Keys.OwnerUID] == string(uid)
}

// read returns id's metadata, or nil when it is gone or its kind is no
// longer served.
func (e *Engine) read(ctx context.Context, id inventory.ID) (*metav1.PartialObjectMetadata, error) {
	return getLive(ctx, e, id, &metav1.PartialObjectMetadata{})
}

// getLive reads id into obj (its metadata, or the whole object) as the
// engine's identity; nil when it does not exist or its kind is not
// served.
func getLive[T client.Object](ctx context.Context, e *Engine, id inventory.ID, obj T) (T, error) {
	var none T
	obj.GetObjectKind().SetGroupVersionKind(id.GroupVersionKind())
	err := e.live().Get(ctx, client.ObjectKey{Namespace: id.Namespace, Name: id.Name}, obj)
	switch {
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		return none, nil
	case err != nil:
		return none, fmt.Errorf("getting %s: %w", id, err)
	}
	return obj, nil
}

// keepOne leaves one object in place: Kept, with its UID, when owner still
// owns it, else Skipped.
func (e *Engine) keepOne(ctx context.Context, owner string, uid types.UID, id inventory.ID) (Change, error) {
	obj, err := e.read(ctx, id)
	if err != nil {
		return Change{}, err
	}
	if obj == nil || !e.ownedBy(obj, owner, uid) || !obj.GetDeletionTimestamp().IsZero() {
		return Change{ID: id, Action: Skipped}, nil
	}
	return Change{ID: id, Action: Kept, UID: obj.GetUID()}, nil
}

// deleted is an object a prune deleted.
type deleted struct {
	id  inventory.ID
	uid types.UID
}

// deleteOne deletes one object if owner still owns it.
func (e *Engine) deleteOne(ctx context.Context, owner string, uid types.UID, id inventory.ID) (Change, deleted, error) {
	obj, err := e.read(ctx, id)
	switch {
	case err != nil:
		return Change{}, deleted{}, err
	case obj == nil:
		return Change{ID: id, Action: Deleted}, deleted{}, nil
	case !e.ownedBy(obj, owner, uid):
		return Change{ID: id, Action: Skipped}, deleted{}, nil
	case !obj.GetDeletionTimestamp().IsZero():
		return Change{ID: id, Action: Deleted}, deleted{}, nil
	}
	d := deleted{id: id, uid: obj.GetUID()}
	err = e.c.Delete(ctx, obj, client.Preconditions{UID: &d.uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Gone, or another object under its name since it was read:
		// this prune deleted nothing to watch for.
		return Change{ID: id, Action: Deleted}, deleted{}, nil
	case err != nil:
		return Change{}, deleted{}, fmt.Errorf("deleting %s: %w", id, err)
	}
	return Change{ID: id, Action: Deleted}, d, nil
}
