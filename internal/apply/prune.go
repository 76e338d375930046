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

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/inventory"
)

// PruneOptions configure Prune.
type PruneOptions struct {
	// DeleteCRDs deletes CRDs (last), which deletes every custom resource
	// of them. Without it CRDs are left in place.
	DeleteCRDs bool
	// Keep, when set, names objects to leave in place rather than delete
	// (another BundleDeployment is waiting to take them over).
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
// served, or that someone else owns now are skipped.
func (e *Engine) Prune(ctx context.Context, owner string, ids []inventory.ID, opts PruneOptions) (*ChangeSet, error) {
	var byRank [ranks][]inventory.ID
	for _, id := range ids {
		byRank[rank(id)] = append(byRank[rank(id)], id)
	}
	cs := &ChangeSet{}
	for r := range byRank {
		if r == rankCRD && !opts.DeleteCRDs {
			for _, id := range byRank[r] {
				cs.add(Change{ID: id, Action: Skipped})
			}
			continue
		}
		group := byRank[r]
		actions := make([]Action, len(group))
		var mu sync.Mutex
		var errs []error
		idx := make([]int, len(group))
		for i := range idx {
			idx[i] = i
		}
		e.each(ctx, idx, func(i int) bool {
			if opts.Keep != nil && opts.Keep(group[i]) {
				actions[i] = Skipped
				return true
			}
			a, err := e.deleteOne(ctx, owner, opts.OwnerUID, group[i])
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return true
			}
			actions[i] = a
			return true
		})
		for i, a := range actions {
			if a != "" {
				cs.add(Change{ID: group[i], Action: a})
			}
		}
		if err := errors.Join(errs...); err != nil {
			return cs, err
		}
		if err := ctx.Err(); err != nil {
			return cs, err
		}
	}
	return cs, nil
}

// deleteOne deletes one object if owner still owns it.
func (e *Engine) deleteOne(ctx context.Context, owner string, uid types.UID, id inventory.ID) (Action, error) {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(id.GroupVersionKind())
	err := e.live().Get(ctx, client.ObjectKey{Namespace: id.Namespace, Name: id.Name}, obj)
	switch {
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		return Deleted, nil
	case err != nil:
		return "", fmt.Errorf("getting %s: %w", id, err)
	case obj.GetLabels()[v1alpha2.LabelOwnerName] != owner:
		return Skipped, nil
	case uid != "" && obj.GetLabels()[v1alpha2.LabelOwnerUID] != "" && obj.GetLabels()[v1alpha2.LabelOwnerUID] != string(uid):
		return Skipped, nil
	case !obj.GetDeletionTimestamp().IsZero():
		return Deleted, nil
	}
	err = e.c.Delete(ctx, obj, client.Preconditions{UID: &obj.UID}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return "", fmt.Errorf("deleting %s: %w", id, err)
	}
	return Deleted, nil
}
