package apply

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/internal/inventory"
)

// clusterRoleGK is the kind of ClusterRoles.
var clusterRoleGK = schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}

// writeBackKinds are the kinds of which another controller may write an
// object back just after rukpak deleted it. kube-controller-manager's
// clusterrole-aggregation controller keeps the rules of every ClusterRole
// with an aggregationRule up to date with a server-side apply, from its
// informer's copy of the ClusterRole. When a bundle's ClusterRoles are
// deleted together, the deletion of one it aggregates from makes it sync
// the aggregating one; if that sync still works from its copy after the
// aggregating ClusterRole is deleted, its apply creates the ClusterRole
// again — with the rules only: no labels, no aggregationRule — which then
// outlived the uninstall and blocked the next install as a collision.
var writeBackKinds = map[schema.GroupKind]bool{clusterRoleGK: true}

const (
	// writeBackWindow is how long after their deletion, and after each
	// deletion again, objects of writeBackKinds are watched for a
	// write-back. The controller works from an informer that lags the
	// API server by milliseconds; a write-back later than this is taken
	// over by the next install instead (see husk).
	writeBackWindow = 2 * time.Second
	// writeBackPoll is how often they are read meanwhile.
	writeBackPoll = 200 * time.Millisecond
	// maxWriteBacks is how often one object is deleted again before the
	// prune fails, naming it.
	maxWriteBacks = 5
	// aggregationController is the field manager of the
	// clusterrole-aggregation controller.
	aggregationController = "clusterrole-aggregation-controller"
)

// settleWriteBacks reads the objects of gone until writeBackWindow has
// passed since the last deletion, and deletes again each one that came
// back as a write-back (see writtenBack). One that came back as someone's
// is left alone.
func (e *Engine) settleWriteBacks(ctx context.Context, owner string, uid types.UID, gone []deleted) error {
	if len(gone) == 0 {
		return nil
	}
	last := time.Now()
	again := map[inventory.ID]int{}
	tick := time.NewTicker(writeBackPoll)
	defer tick.Stop()
	for time.Since(last) < writeBackWindow {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		for i := range gone {
			d := &gone[i]
			if d.uid == "" {
				continue // someone else's now
			}
			obj, err := e.read(ctx, d.id)
			if err != nil {
				return err
			}
			if obj == nil || obj.GetUID() == d.uid {
				continue // gone, or still going
			}
			if !e.writtenBack(obj, owner, uid) {
				d.uid = ""
				continue
			}
			if again[d.id]++; again[d.id] > maxWriteBacks {
				return fmt.Errorf("%s was written back (by field managers %s) each of the %d times it was deleted", d.id, fieldManagers(obj), maxWriteBacks)
			}
			back := obj.GetUID()
			err = e.c.Delete(ctx, obj, client.Preconditions{UID: &back}, client.PropagationPolicy(metav1.DeletePropagationBackground))
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return fmt.Errorf("deleting %s again, written back after its deletion: %w", d.id, err)
			}
			d.uid, last = back, time.Now()
		}
	}
	return nil
}

// writtenBack reports whether obj, found with another UID under the name
// of an object rukpak deleted (so created after that one was gone: names
// are unique), is a write-back of it, nobody's object: without owner
// references, and without owner labels or with owner's own. Such an
// object can only be one that a controller wrote back from its copy of
// the deleted one, or one someone created under that name in the seconds
// rukpak was deleting it, unlabelled; either way the uninstall must not
// leave it behind. An object labelled for another BundleDeployment, or
// owned by another object, is not touched.
func (e *Engine) writtenBack(obj *metav1.PartialObjectMetadata, owner string, uid types.UID) bool {
	if len(obj.GetOwnerReferences()) > 0 {
		return false
	}
	_, labelled := obj.GetLabels()[e.opts.Keys.OwnerKind]
	return !labelled || e.ownedBy(obj, owner, uid)
}

// husk reports whether obj, an existing object where a plan's aggregating
// ClusterRole (one with an aggregationRule) goes, is only what the
// clusterrole-aggregation controller wrote back after a delete: one field
// manager, that controller, which applied the rules and nothing else; no
// labels, annotations, owner references or finalizers. It is nobody's, and
// the plan takes it over. Anyone who may create ClusterRoles can make such
// an object, but only with rules they hold themselves (RBAC refuses any
// other), and once the plan has set its aggregationRule the controller
// replaces those rules (an atomic list) with the aggregated ones: taking
// it over gives its maker nothing.
func husk(it item, obj *metav1.PartialObjectMetadata) bool {
	if it.id.GroupVersionKind().GroupKind() != clusterRoleGK || it.obj.Object["aggregationRule"] == nil {
		return false
	}
	if len(obj.GetLabels()) > 0 || len(obj.GetAnnotations()) > 0 || len(obj.GetOwnerReferences()) > 0 || len(obj.GetFinalizers()) > 0 {
		return false
	}
	mf := obj.GetManagedFields()
	if len(mf) != 1 || mf[0].Manager != aggregationController || mf[0].Operation != metav1.ManagedFieldsOperationApply || mf[0].FieldsV1 == nil {
		return false
	}
	var fields map[string]any
	if err := json.Unmarshal(mf[0].FieldsV1.Raw, &fields); err != nil {
		return false
	}
	_, rules := fields["f:rules"]
	return len(fields) == 1 && rules
}

// fieldManagers lists obj's field managers, for messages.
func fieldManagers(obj *metav1.PartialObjectMetadata) string {
	var names []string
	seen := map[string]bool{}
	for _, mf := range obj.GetManagedFields() {
		if !seen[mf.Manager] {
			seen[mf.Manager] = true
			names = append(names, mf.Manager)
		}
	}
	if len(names) == 0 {
		return "none recorded"
	}
	return fmt.Sprint(names)
}
