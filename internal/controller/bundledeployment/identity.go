package bundledeployment

import (
	"context"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/identity"
	"github.com/rukpak/rukpak/internal/inventory"
	"github.com/rukpak/rukpak/internal/objectwatch"
	"github.com/rukpak/rukpak/internal/permissions"
	"github.com/rukpak/rukpak/pkg/failure"
)

// Recheck intervals of refusals an admin fixes outside the
// BundleDeployment (RBAC changes trigger no reconcile).
const (
	// permissionsRecheck: a revision refused for missing permissions, or
	// a requester not authorized, is checked again this often.
	permissionsRecheck = 30 * time.Second
	// firstPermissionsRecheck is the first recheck after such a refusal.
	firstPermissionsRecheck = 3 * time.Second
	// defaultApprovalTTL is how long an allowed requester is trusted before
	// it is checked again.
	defaultApprovalTTL = time.Minute
)

// actor is who one reconcile reads and writes the BundleDeployment's
// objects as, with the engine acting as that identity (its Reader reads
// live objects as it too).
type actor struct {
	id     identity.Identity
	engine *apply.Engine
	// client acts as a ServiceAccount identity (nil for the manager).
	client client.Client
}

// identityOf is who installs bd: its serviceAccount in the install
// namespace, or the manager itself when the manager allows that.
func (r *Reconciler) identityOf(bd *v1alpha2.BundleDeployment) (identity.Identity, error) {
	if sa := bd.Spec.ServiceAccount; sa != nil {
		return identity.ServiceAccount(bd.Spec.InstallNamespace, sa.Name), nil
	}
	if r.ManagerIdentity {
		return identity.Manager, nil
	}
	return identity.Identity{}, failure.New(v1alpha2.ReasonServiceAccountRequired,
		"spec.serviceAccount is required: rukpak installs each bundle as a ServiceAccount of its install namespace (%s), whose RBAC bounds what the bundle may do; "+
			"name one, or run the manager with --default-identity=manager to install as the manager itself (see docs/security.md)", bd.Spec.InstallNamespace)
}

// actorFor returns the actor of identity id.
func (r *Reconciler) actorFor(id identity.Identity) (*actor, error) {
	if id.IsManager() {
		return &actor{id: id, engine: r.Engine}, nil
	}
	c, err := r.Identities.For(id)
	if err != nil {
		return nil, err
	}
	return &actor{id: id, engine: r.Engine.With(c.Client, c.Client, c.Metadata), client: c.Client}, nil
}

// useIdentity records that BundleDeployment name installs as id; the
// clients of an identity it used before are dropped when no other
// BundleDeployment uses that one.
func (r *Reconciler) useIdentity(name string, id identity.Identity) {
	if prev, unused := r.mem.useIdentity(name, id); unused {
		r.Identities.Forget(prev)
	}
}

// approvedRequester is a requester found allowed, and when.
type approvedRequester struct {
	generation int64
	user       string
	groups     string
	at         time.Time
}

// authorize re-checks that whoever last changed the spec may impersonate
// its install identity and use its class (the admission policies check the
// same when the change is made; rights can be revoked since). An allowed
// requester is trusted for ApprovalTTL; a refusal stops the reconcile
// before anything is read or written as the identity.
func (r *Reconciler) authorize(ctx context.Context, s *scope) (bool, error) {
	if r.Approval == nil {
		return true, nil
	}
	bd := s.bd
	memo := approvedRequester{generation: bd.Generation, user: bd.Annotations[v1alpha2.AnnotationRequestedBy], groups: bd.Annotations[v1alpha2.AnnotationRequestedByGroups]}
	prev, ok := r.mem.approval(bd.Name)
	if ok && prev.generation == memo.generation && prev.user == memo.user && prev.groups == memo.groups && time.Since(prev.at) < r.approvalTTL() {
		return true, nil
	}
	if err := r.Approval.Check(ctx, bd); err != nil {
		if failure.As(err) == nil {
			return false, err
		}
		s.installErr = err
		s.requeueWithin(adminRecheck(bd, err))
		return false, nil
	}
	memo.at = time.Now()
	r.mem.setApproval(bd.Name, memo)
	return true, nil
}

func (r *Reconciler) approvalTTL() time.Duration {
	if r.ApprovalTTL > 0 {
		return r.ApprovalTTL
	}
	return defaultApprovalTTL
}

// preflight checks that the install identity may do everything the apply
// engine does to every object of plan; if not, nothing is applied and the
// refusal lists the missing rules. The manager's own identity is not
// checked (it runs in the explicit cluster-admin mode).
func (r *Reconciler) preflight(ctx context.Context, s *scope, plan *apply.Plan) error {
	if r.Permissions == nil || s.as.id.IsManager() {
		return nil
	}
	res := plan.Resources()
	targets := make([]permissions.Target, len(res))
	for i, o := range res {
		targets[i] = permissions.Target{Resource: o.Resource, Namespace: o.ID.Namespace, Name: o.ID.Name}
	}
	subject := permissions.ServiceAccount(s.as.id.Namespace, s.as.id.Name)
	var listed permissions.RulesReviewer
	if s.as.client != nil {
		listed = rulesOf(s.as.client)
	}
	missing, err := r.Permissions.MissingListed(ctx, subject, targets, listed)
	if err != nil {
		return fmt.Errorf("checking the permissions of %s: %w", s.as.id, err)
	}
	if len(missing) > 0 {
		return failure.New(v1alpha2.ReasonMissingPermissions, "%s", permissions.Message(subject, missing))
	}
	return nil
}

// rulesOf lists the rules of the identity c impersonates, with a
// SelfSubjectRulesReview (every authenticated user may create one).
func rulesOf(c client.Client) permissions.RulesReviewer {
	return func(ctx context.Context, namespace string) (*authorizationv1.SubjectRulesReviewStatus, error) {
		review := &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: namespace}}
		if err := c.Create(ctx, review); err != nil {
			return nil, fmt.Errorf("listing the rules of namespace %s: %w", namespace, err)
		}
		return &review.Status, nil
	}
}

// adminRecheck is when a refusal that waits for an admin is checked
// again: soon the first time (RBAC just created with the BundleDeployment
// can take a moment to reach the authorizer), then every
// permissionsRecheck.
func adminRecheck(bd *v1alpha2.BundleDeployment, err error) time.Duration {
	if c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled); c == nil || c.Reason != failure.Reason(err, "") {
		return firstPermissionsRecheck
	}
	return permissionsRecheck
}

// waitsForAdmin reports whether an install error is a refusal an admin
// fixes outside the BundleDeployment (RBAC): not a failed revision,
// checked again now and then. (NotAuthorized and ServiceAccountRequired
// stop the reconcile before any install.)
func waitsForAdmin(err error) bool {
	return failure.Reason(err, "") == v1alpha2.ReasonMissingPermissions
}

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
	owner := obj.GetLabels()[v1alpha2.LabelOwnerName]
	if r.echoes.hold(owner, kind, obj, deleted) {
		// Judged when the owner's reconcile ends (see echoes).
	} else if deleted || !r.isUnchanged(kind, obj) {
		r.enqueue(owner)
	}
	// The owner label itself may have been removed or changed.
	if old != nil && old.GetLabels()[v1alpha2.LabelOwnerName] != obj.GetLabels()[v1alpha2.LabelOwnerName] {
		r.enqueue(old.GetLabels()[v1alpha2.LabelOwnerName])
	}
}

func (r *Reconciler) enqueue(name string) {
	if name == "" || r.queue == nil {
		return
	}
	r.queue.Add(reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
}
