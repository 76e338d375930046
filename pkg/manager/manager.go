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
package manager

import (
	"fmt"
	"time"

	"k8s.io/client-go/rest"
	ctrlmanager "sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/rukpak/rukpak/api/v1alpha2"
	internal "github.com/rukpak/rukpak/internal/manager"
	"github.com/rukpak/rukpak/pkg/provisioner"
)

// The values of Options.DefaultIdentity.
const (
	// IdentityNone: each BundleDeployment names its spec.serviceAccount,
	// whose RBAC bounds what it installs (least privilege).
	IdentityNone = "none"
	// IdentityManager: BundleDeployments without spec.serviceAccount
	// install as the manager itself, which then needs the RBAC of
	// everything they install.
	IdentityManager = "manager"
)

// Options configure a manager.
type Options struct {
	// Provisioners are the provisioners the manager runs (at least one).
	// Their formats render in the manager's process.
	Provisioners []provisioner.Provisioner
	// Classes are ProvisionerClasses created when the manager starts, if
	// they do not exist (typically one per provisioner).
	Classes []v1alpha2.ProvisionerClass
	// StorageDir is the directory of the content store (unpacked
	// bundles); required.
	StorageDir string
	// LeaderElection makes only one of several replicas act, holding the
	// lease LeaderElectionID in rukpak-system; required unique per kind
	// of manager.
	LeaderElection   bool
	LeaderElectionID string
	// MaxConcurrentReconciles is how many BundleDeployments (and Bundles)
	// are reconciled at once; ApplyConcurrency how many objects one
	// revision writes at once.
	MaxConcurrentReconciles, ApplyConcurrency int
	// TenantReconciles is how many BundleDeployments of one tenant (the
	// namespace they install into) are reconciled at once, at most.
	TenantReconciles int
	// HealthProbeBindAddress serves /healthz and /readyz and
	// MetricsBindAddress Prometheus metrics; "0" turns either off.
	HealthProbeBindAddress, MetricsBindAddress string
	// ContentBindAddress serves Bundle content ("" turns it off);
	// ContentURL is its external base URL, from which Bundles'
	// status.contentURL is built.
	ContentBindAddress, ContentURL string
	// DefaultIdentity is IdentityNone (the default) or IdentityManager.
	DefaultIdentity string
	// RequireApproval re-checks at reconcile time that whoever last
	// changed a BundleDeployment may use its identity, class, Secrets and
	// ConfigMaps (see docs/security.md); on by default.
	RequireApproval bool
	// SourceTimeout bounds resolving and unpacking one source; 0 means the
	// default (5 minutes).
	SourceTimeout time.Duration
	// StoreQuota bounds the bytes of the content store; 0 means no quota.
	StoreQuota int64
}

// DefaultOptions are the settings of rukpak's own manager, without
// provisioners, classes or storage directory.
func DefaultOptions() Options {
	d := internal.DefaultOptions()
	return Options{
		MaxConcurrentReconciles: d.MaxConcurrentReconciles,
		ApplyConcurrency:        d.ApplyConcurrency,
		TenantReconciles:        d.TenantReconciles,
		HealthProbeBindAddress:  d.HealthProbeBindAddress,
		MetricsBindAddress:      d.MetricsBindAddress,
		DefaultIdentity:         d.DefaultIdentity,
		RequireApproval:         d.RequireApproval,
		SourceTimeout:           d.SourceTimeout,
		StoreQuota:              d.StoreQuota,
	}
}

// New builds a manager for opts.Provisioners; Start it to run. The CRDs of
// package api/v1alpha2 must be installed.
func New(cfg *rest.Config, opts Options) (ctrlmanager.Manager, error) {
	if len(opts.Provisioners) == 0 {
		return nil, fmt.Errorf("no provisioners to run")
	}
	if opts.LeaderElection && opts.LeaderElectionID == "" {
		return nil, fmt.Errorf("leader election needs a LeaderElectionID of this manager's own")
	}
	set := provisioner.Set{}
	for _, p := range opts.Provisioners {
		if p.ControllerName == "" || p.Format == nil {
			return nil, fmt.Errorf("provisioner %q: a controllerName and a format are required", p.ControllerName)
		}
		if _, dup := set[p.ControllerName]; dup {
			return nil, fmt.Errorf("provisioner %q given twice", p.ControllerName)
		}
		set[p.ControllerName] = p
	}
	in := internal.DefaultOptions()
	in.Provisioners = set
	in.Classes = append([]v1alpha2.ProvisionerClass{}, opts.Classes...)
	in.StorageDir = opts.StorageDir
	in.LeaderElection, in.LeaderElectionID = opts.LeaderElection, opts.LeaderElectionID
	in.MaxConcurrentReconciles, in.ApplyConcurrency = opts.MaxConcurrentReconciles, opts.ApplyConcurrency
	in.TenantReconciles = opts.TenantReconciles
	in.HealthProbeBindAddress, in.MetricsBindAddress = opts.HealthProbeBindAddress, opts.MetricsBindAddress
	in.ContentBindAddress, in.ContentURL = opts.ContentBindAddress, opts.ContentURL
	in.DefaultIdentity = opts.DefaultIdentity
	if in.DefaultIdentity == "" {
		in.DefaultIdentity = IdentityNone
	}
	in.RequireApproval = opts.RequireApproval
	in.SourceTimeout, in.StoreQuota = opts.SourceTimeout, opts.StoreQuota
	// The CRD upgrade-safety webhook is rukpak's own manager's to serve.
	in.CRDWebhookBindAddress = ""
	return internal.New(cfg, in)
}
