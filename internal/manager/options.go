package manager

import (
	"fmt"
	"slices"
	"time"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/builtins"
	"github.com/rukpak/rukpak/internal/content"
	"github.com/rukpak/rukpak/internal/controller/bundledeployment"
	"github.com/rukpak/rukpak/internal/controller/provisionerclass"
	"github.com/rukpak/rukpak/internal/sandbox"
	"github.com/rukpak/rukpak/internal/source"
	"github.com/rukpak/rukpak/pkg/provisioner"
)

// EngineOptions are the settings every manager of the rukpak engine has,
// as the engine reads them: rukpak's own (Options embeds them) and that of
// a provisioner built on package github.com/rukpak/rukpak/pkg/manager.
// Their contract is that package's Options, which declares the same
// fields in the same order (this package cannot import it); pkg/manager
// converts one type to the other, so a field changed here but not there
// fails to compile. BindEngineFlags registers a flag for each but
// Provisioners, Classes, LeaderElectionID and ApprovalTTL, which are set in
// code.
type EngineOptions struct {
	// Provisioners are the provisioners the manager runs; their formats
	// render in the manager's process. Nil means rukpak's built-in ones
	// (plain, registry+v1, Helm), rendering in sandboxed children bounded
	// by Options.Render: only rukpak's own manager runs those, and
	// pkg/manager requires at least one provisioner of its own.
	Provisioners []provisioner.Provisioner
	// Classes are ProvisionerClasses created at start when missing
	// (typically one per provisioner); nil means the built-in classes,
	// when Provisioners is nil.
	Classes []v1alpha2.ProvisionerClass
	// StorageDir is the directory of the content store (unpacked
	// bundles); required.
	StorageDir string
	// MaxConcurrentReconciles is how many BundleDeployments (and Bundles)
	// are reconciled at once.
	MaxConcurrentReconciles int
	// TenantReconciles is how many BundleDeployments of one tenant (the
	// namespace they install into; see docs/security.md) are reconciled
	// at once, at most.
	TenantReconciles int
	// HookWaits is how many BundleDeployments wait for hooks without a
	// reconcile worker at once, and TenantHookWaits how many of one
	// tenant; a wait beyond them holds its worker.
	HookWaits, TenantHookWaits int
	// ApplyConcurrency is how many objects one revision applies at once.
	ApplyConcurrency int
	// HealthProbeBindAddress serves /healthz and /readyz; "0" turns it off.
	HealthProbeBindAddress string
	// MetricsBindAddress serves metrics; "0" turns it off.
	MetricsBindAddress string
	// MetricsInsecure serves metrics over plain HTTP to anyone; by default
	// they are served over HTTPS (a self-signed certificate unless
	// MetricsCertDir holds tls.crt and tls.key) to clients whose token the
	// API server authenticates (TokenReview) and authorizes for GET on
	// the non-resource URL /metrics (SubjectAccessReview).
	MetricsInsecure bool
	// MetricsCertDir holds the metrics server's tls.crt and tls.key.
	MetricsCertDir string
	// PprofBindAddress serves Go's pprof profiles; "" or "0" turns it off.
	PprofBindAddress string
	// ContentBindAddress serves Bundle content (see package
	// contentserver); "" turns it off.
	ContentBindAddress string
	// ContentURL is the external base URL of the content server; Bundles'
	// status.contentURL is built from it.
	ContentURL string
	// ContentTLSCertFile and ContentTLSKeyFile make the content server
	// serve HTTPS; without them it serves plain HTTP.
	ContentTLSCertFile, ContentTLSKeyFile string
	// LeaderElection makes only one of several replicas act.
	LeaderElection bool
	// LeaderElectionID names the leader-election lease; "" means
	// rukpak-manager, rukpak's own manager's. Managers of other
	// provisioners need their own (pkg/manager requires one).
	LeaderElectionID string
	// LeaderElectionNamespace holds the leader-election lease.
	LeaderElectionNamespace string
	// LeaseDuration is how long a leader's lease lasts without renewal:
	// after a leader dies, another replica takes over within about that
	// (plus RetryPeriod). RenewDeadline is how long the leader tries to
	// renew before it gives up leading; RetryPeriod how often replicas
	// try (with jitter, up to 2.2 times as long). Zero means
	// DefaultLeaseDuration, DefaultRenewDeadline and DefaultRetryPeriod:
	// a replica takes over at most about 11s after the leader died.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// DefaultIdentity is who installs BundleDeployments without
	// spec.serviceAccount: IdentityNone refuses them (ServiceAccountRequired);
	// IdentityManager installs them as the manager itself, which then needs
	// the RBAC of everything they install (the cluster-admin mode).
	DefaultIdentity string
	// RequireApproval re-checks at reconcile time that the user who last
	// changed a BundleDeployment's spec (the requested-by annotations the
	// admission policies of config/policy set) may impersonate its
	// identity and use its class and the Secrets and ConfigMaps it names,
	// and that whoever wrote a Bundle (other than the manager) may use its
	// class, Secrets and ConfigMaps.
	RequireApproval bool
	// RequireSeparateApprover refuses an approval of a revision held by
	// spec.upgrade.approval given by the user who requested it (the
	// approved-by annotation equal to requested-by): four eyes.
	RequireSeparateApprover bool
	// ApprovalTTL is how long an allowed requester is trusted before the
	// next reconcile checks again; 0 means a minute.
	ApprovalTTL time.Duration
	// SourceTimeout bounds resolving and unpacking one source (see
	// source.Registry.WithDeadline); 0 means source.DefaultDeadline.
	SourceTimeout time.Duration
	// SourceConcurrency is how many revisions are unpacked (fetched) at
	// once, TenantSourceConcurrency how many of one tenant's; 0 means
	// content.DefaultFetches and content.DefaultTenantFetches.
	SourceConcurrency, TenantSourceConcurrency int
	// StoreQuota bounds the bytes of the content store; content no Bundle
	// references is evicted to make room. 0 means no quota.
	StoreQuota int64
	// TenantStoreQuota bounds the bytes of the content one tenant's
	// revisions reference (see package tenant); 0 means a quarter of
	// StoreQuota, negative no bound but StoreQuota. A tenant's kept Helm
	// renders count against it too.
	TenantStoreQuota int64
	// TenantRenders bounds how many renders of one tenant's revisions are
	// kept in the cluster at once; 0 means
	// renderstore.DefaultTenantRenders.
	TenantRenders int
}

// Options configure rukpak's own manager: the engine's settings and those
// of what only it does.
type Options struct {
	EngineOptions
	// CRDWebhookBindAddress serves the CRD upgrade-safety webhook (see
	// package crdwebhook) on "host:port"; "" turns it off.
	CRDWebhookBindAddress string
	// CRDWebhookService, when set, is the Service in rukpak-system through
	// which the API server calls the webhook; when empty it calls
	// CRDWebhookBindAddress directly.
	CRDWebhookService string
	// ServeV1alpha1 keeps core.rukpak.io/v1alpha1 served (the CRD
	// webhook's registrar sets the CRDs' served flag; it converts that
	// version). False needs CRDWebhookBindAddress. Serving it costs every write of a BundleDeployment or
	// Bundle a conversion webhook call, for the API server's v1alpha1
	// watch cache.
	ServeV1alpha1 bool
	// Render bounds the child processes the built-in provisioners render
	// bundles in (memory, time, how many at once in all and of one tenant;
	// see package sandbox); zero fields are defaults.
	Render sandbox.Limits
	// Shard, when set, makes the manager reconcile (and cache) only the
	// BundleDeployments labelled core.rukpak.io/shard=Shard and their
	// Bundles, elect its leader on a lease of the shard's own and
	// announce the shard on the Lease rukpak-shard-Shard; when empty it
	// takes those without the label and reports those whose label names
	// no running shard (see package shard and docs/ha.md).
	Shard string
	// SkipControllerNameValidation lets a process build more than one
	// manager (one after another, as a restart test does); controller
	// names are otherwise unique per process.
	SkipControllerNameValidation bool
}

// The values of EngineOptions.DefaultIdentity, as those of
// pkg/manager.Options.DefaultIdentity (its tests check they are equal).
const (
	// IdentityNone: spec.serviceAccount is required.
	IdentityNone = "none"
	// IdentityManager: BundleDeployments without one install as the manager.
	IdentityManager = "manager"
)

// DefaultStoreQuota is the content store's quota cmd/rukpak starts with
// (10 GiB).
const DefaultStoreQuota int64 = 10 << 30

// The leader election's timing when EngineOptions leave it zero.
const (
	DefaultLeaseDuration = 8 * time.Second
	DefaultRenewDeadline = 6 * time.Second
	DefaultRetryPeriod   = time.Second
)

// DefaultEngineOptions are the engine's settings cmd/rukpak starts with,
// without provisioners, classes or storage directory.
func DefaultEngineOptions() EngineOptions {
	return EngineOptions{
		MaxConcurrentReconciles: 16,
		TenantReconciles:        bundledeployment.DefaultTenantReconciles,
		HookWaits:               bundledeployment.DefaultHookWaits,
		TenantHookWaits:         bundledeployment.DefaultTenantHookWaits,
		ApplyConcurrency:        8,
		HealthProbeBindAddress:  ":8081",
		MetricsBindAddress:      ":8443",
		LeaderElectionNamespace: v1alpha2.SystemNamespace,
		LeaseDuration:           DefaultLeaseDuration,
		RenewDeadline:           DefaultRenewDeadline,
		RetryPeriod:             DefaultRetryPeriod,
		DefaultIdentity:         IdentityNone,
		RequireApproval:         true,
		SourceTimeout:           source.DefaultDeadline,
		SourceConcurrency:       content.DefaultFetches,
		TenantSourceConcurrency: content.DefaultTenantFetches,
		StoreQuota:              DefaultStoreQuota,
	}
}

// DefaultOptions are the settings cmd/rukpak starts with.
func DefaultOptions() Options {
	return Options{
		EngineOptions: DefaultEngineOptions(),
		Render:        sandbox.DefaultLimits(),
		ServeV1alpha1: true,
	}
}

// provisionersOf returns the provisioners opts run, by controllerName, and
// the classes to create: rukpak's built-in ones when opts name none.
func provisionersOf(opts Options) (provisioner.Set, []v1alpha2.ProvisionerClass, error) {
	if opts.Provisioners == nil {
		renderer, err := sandbox.New(opts.Render)
		if err != nil {
			return nil, nil, err
		}
		classes := opts.Classes
		if classes == nil {
			classes = provisionerclass.Builtin
		}
		return builtins.BuiltinWith(renderer), classes, nil
	}
	set := provisioner.Set{}
	for _, p := range opts.Provisioners {
		if p.ControllerName == "" || p.Format == nil {
			return nil, nil, fmt.Errorf("provisioner %q: a controllerName and a format are required", p.ControllerName)
		}
		if _, dup := set[p.ControllerName]; dup {
			return nil, nil, fmt.Errorf("provisioner %q given twice", p.ControllerName)
		}
		set[p.ControllerName] = p
	}
	return set, slices.Clone(opts.Classes), nil
}
