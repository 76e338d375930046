package bundledeployment

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/identity"
	"github.com/rukpak/rukpak/internal/inventory"
	"github.com/rukpak/rukpak/pkg/failure"
)

// actor is who one reconcile reads and writes the BundleDeployment's
// objects as, with the engine acting as that identity (its Reader reads
// live objects as it too).
type actor struct {
	id     identity.Identity
	engine revisionEngine
	// client acts as a ServiceAccount identity (nil for the manager).
	client client.Client
}

// revisionEngine is what the steps do with objects through the apply
// engine acting as the install identity (apply.Engine.With).
type revisionEngine interface {
	// Apply writes a plan.
	Apply(ctx context.Context, plan *apply.Plan, opts apply.ApplyOptions) (*apply.ChangeSet, error)
	// Prune deletes owner's objects ids.
	Prune(ctx context.Context, owner string, ids []inventory.ID, opts apply.PruneOptions) (*apply.ChangeSet, error)
	// EnsureNamespace creates namespace name if it does not exist.
	EnsureNamespace(ctx context.Context, name string) error
	// Reader reads live objects as the identity.
	Reader() client.Reader
}

var _ revisionEngine = (*apply.Engine)(nil)

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

// act picks the install identity and its clients.
func (r *Reconciler) act(_ context.Context, s *scope) (bool, error) {
	id, err := r.identityOf(s.bd)
	if err != nil {
		// Fixed by a spec change, which reconciles again.
		s.installErr = err
		return false, nil
	}
	s.as, err = r.actorFor(id)
	if err != nil {
		return false, err
	}
	r.useIdentity(s.bd.Name, id)
	return true, nil
}
