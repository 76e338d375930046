package manager

import (
	"time"

	"github.com/rukpak/rukpak/api/v1alpha2"
	internal "github.com/rukpak/rukpak/internal/manager"
	"github.com/rukpak/rukpak/pkg/provisioner"
)

// The values of Options.DefaultIdentity.
const (
	// IdentityNone: each BundleDeployment names its spec.serviceAccount,
	// whose RBAC bounds what it installs (least privilege); one without
	// it is refused with ServiceAccountRequired.
	IdentityNone = "none"
	// IdentityManager: BundleDeployments without spec.serviceAccount
	// install as the manager itself, which then needs the RBAC of
	// everything they install (the cluster-admin mode).
	IdentityManager = "manager"
)

// Options configure a manager of the rukpak engine. They are the settings
// rukpak's own manager (cmd/rukpak) has too, with the same flags
// (BindFlags): it takes them in this type and adds only those of what no
// other manager does (its built-in formats' render sandbox, the CRD
// upgrade-safety webhook, serving core.rukpak.io/v1alpha1).
//
// BindFlags registers a flag for each field but Provisioners, Classes,
// LeaderElectionID and ApprovalTTL, which a binary sets in code. A
// provisioner sets at least:
//
//   - Provisioners: the provisioners the manager runs (at least one);
//   - Classes: ProvisionerClasses created when the manager starts, if
//     they do not exist (typically one per provisioner);
//   - StorageDir: the directory of the content store;
//   - LeaderElectionID, with LeaderElection: the lease in rukpak-system,
//     one of this kind of manager's own.
//
// Start from DefaultOptions: a zero field means a default only where its
// documentation says so.
type Options struct {
	// Provisioners are the provisioners the manager runs, by
	// controllerName; their formats render in the manager's process. New
	// requires at least one, each with a controllerName and a format, no
	// controllerName twice.
	Provisioners []provisioner.Provisioner
	// Classes are ProvisionerClasses created when the manager starts, if
	// none of their name exists (typically one per provisioner); an
	// existing class is left as it is.
	Classes []v1alpha2.ProvisionerClass
	// StorageDir is the directory of the content store (unpacked
	// bundles); required.
	StorageDir string
	// MaxConcurrentReconciles is how many BundleDeployments (and, apart,
	// Bundles) are reconciled at once.
	MaxConcurrentReconciles int
	// TenantReconciles is how many BundleDeployments of one tenant (the
	// namespace they install into; see docs/security.md) are reconciled
	// at once, at most.
	TenantReconciles int
	// HookWaits is how many BundleDeployments wait for Helm hooks without
	// holding a reconcile worker at once, and TenantHookWaits how many of
	// one tenant; a wait beyond them holds its worker.
	HookWaits, TenantHookWaits int
	// ApplyConcurrency is how many objects of one revision are applied at
	// once.
	ApplyConcurrency int
	// HealthProbeBindAddress serves /healthz and /readyz; "0" turns them
	// off.
	HealthProbeBindAddress string
	// MetricsBindAddress serves metrics; "0" turns it off.
	MetricsBindAddress string
	// MetricsInsecure serves metrics over plain HTTP to anyone. When
	// false they are served over HTTPS (a self-signed certificate unless
	// MetricsCertDir holds tls.crt and tls.key) to clients whose token the
	// API server authenticates (TokenReview) and authorizes for GET on
	// the non-resource URL /metrics (SubjectAccessReview).
	MetricsInsecure bool
	// MetricsCertDir holds the metrics server's tls.crt and tls.key.
	MetricsCertDir string
	// PprofBindAddress serves Go's pprof profiles; "" or "0" turns it off.
	PprofBindAddress string
	// ContentBindAddress serves the unpacked content of Bundles over
	// HTTP(S); "" turns it off.
	ContentBindAddress string
	// ContentURL is the external base URL of the content server; Bundles'
	// status.contentURL is built from it.
	ContentURL string
	// ContentTLSCertFile and ContentTLSKeyFile make the content server
	// serve HTTPS; without them it serves plain HTTP.
	ContentTLSCertFile, ContentTLSKeyFile string
	// LeaderElection makes only one of several replicas act.
	LeaderElection bool
	// LeaderElectionID names the leader-election lease; New requires one
	// with LeaderElection, of this kind of manager's own (rukpak's own
	// manager's is rukpak-manager).
	LeaderElectionID string
	// LeaderElectionNamespace holds the leader-election lease; ""
	// means rukpak-system.
	LeaderElectionNamespace string
	// LeaseDuration is how long a leader's lease lasts without renewal:
	// after a leader dies, another replica takes over within about that
	// (plus RetryPeriod). RenewDeadline is how long the leader tries to
	// renew before it gives up leading; RetryPeriod how often replicas
	// try (with jitter, up to 2.2 times as long). Zero means the
	// defaults (8s, 6s and 1s): a replica takes over at most about 11s
	// after the leader died.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// DefaultIdentity is who installs BundleDeployments without
	// spec.serviceAccount: IdentityNone (or "") refuses them;
	// IdentityManager installs them as the manager itself.
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
	// SourceTimeout bounds resolving and unpacking one source (image,
	// git, http, configMaps, upload); 0 means 5 minutes. A source that
	// stalls fails with ResourceLimit.
	SourceTimeout time.Duration
	// SourceConcurrency is how many revisions are unpacked (fetched) at
	// once, TenantSourceConcurrency how many of one tenant's; 0 means 8
	// and 2.
	SourceConcurrency, TenantSourceConcurrency int
	// StoreQuota bounds the bytes of the content store; content no Bundle
	// references is evicted to make room, and a revision that cannot fit
	// fails with ResourceLimit. 0 means no quota.
	StoreQuota int64
	// TenantStoreQuota bounds the bytes of the content one tenant's
	// revisions reference; 0 means a quarter of StoreQuota, negative no
	// bound but StoreQuota. A tenant's kept Helm renders count against it
	// too.
	TenantStoreQuota int64
	// TenantRenders bounds how many renders of one tenant's Helm
	// revisions are kept in the cluster at once; 0 means 64.
	TenantRenders int
}

// DefaultOptions are the settings rukpak's own manager starts with,
// without provisioners, classes or storage directory.
func DefaultOptions() Options { return Options(internal.DefaultEngineOptions()) }

// engine returns opts as the engine takes them. The engine declares the
// same fields (internal/manager cannot import this package), and this
// conversion is what keeps the two alike: a field added, removed or
// changed in one but not the other fails to compile here.
func (opts Options) engine() internal.EngineOptions { return internal.EngineOptions(opts) }
