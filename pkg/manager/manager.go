// Package manager runs the rukpak engine for a set of provisioners: the
// BundleDeployment and Bundle controllers with everything they are made
// of — sources (image, git, http, configMaps, upload), the content store
// and its server, preflights (permissions, collisions, CRD upgrade
// safety), server-side apply with pruning, drift correction, health checks,
// rollback, least-privilege installs through each BundleDeployment's
// ServiceAccount, and Helm-style hooks. A provisioner outside this
// repository brings its format (package
// github.com/rukpak/rukpak/pkg/format) and controllerName (package
// github.com/rukpak/rukpak/pkg/provisioner) and gets all of that.
//
// A manager acts only on BundleDeployments and Bundles whose
// ProvisionerClass names one of its controllerNames; several managers
// (rukpak's own and others) share a cluster, each with its own
// leader-election lease.
//
// It is an assembly of the public API (see package
// github.com/rukpak/rukpak/pkg): a thin door onto rukpak's own manager.
// Options are the contract the two share: rukpak's manager is built from
// them too, and binds the same flags (BindFlags).
package manager

import (
	"cmp"
	"errors"

	"k8s.io/client-go/rest"
	ctrlmanager "sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/rukpak/rukpak/api/v1alpha2"
	internal "github.com/rukpak/rukpak/internal/manager"
)

// New builds a manager for opts.Provisioners; Start it to run. The CRDs of
// package api/v1alpha2 must be installed.
func New(cfg *rest.Config, opts Options) (ctrlmanager.Manager, error) {
	if len(opts.Provisioners) == 0 {
		return nil, errors.New("no provisioners to run")
	}
	if opts.LeaderElection && opts.LeaderElectionID == "" {
		return nil, errors.New("leader election needs a LeaderElectionID of this manager's own")
	}
	// What only rukpak's own manager does stays as it starts: v1alpha1 is
	// served, and the CRD upgrade-safety webhook is its own to serve.
	in := internal.DefaultOptions()
	in.EngineOptions = opts.engine()
	in.CRDWebhookBindAddress = ""
	in.DefaultIdentity = cmp.Or(in.DefaultIdentity, IdentityNone)
	in.LeaderElectionNamespace = cmp.Or(in.LeaderElectionNamespace, v1alpha2.SystemNamespace)
	return internal.New(cfg, in)
}
