// Package manager wires rukpak's built-in provisioners into one
// controller-runtime manager: the caches, the content store, the apply
// engine, the inventory and the BundleDeployment, Bundle and
// ProvisionerClass controllers. cmd/rukpak runs it; tests run it in-process
// against a real API server.
package manager

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/rukpak/rukpak/api/v1alpha1"
	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/approval"
	"github.com/rukpak/rukpak/internal/builtins"
	"github.com/rukpak/rukpak/internal/clusterinfo"
	"github.com/rukpak/rukpak/internal/content"
	"github.com/rukpak/rukpak/internal/controller/bundle"
	"github.com/rukpak/rukpak/internal/controller/bundledeployment"
	"github.com/rukpak/rukpak/internal/controller/provisionerclass"
	"github.com/rukpak/rukpak/internal/crdwebhook"
	"github.com/rukpak/rukpak/internal/identity"
	"github.com/rukpak/rukpak/internal/inventory"
	"github.com/rukpak/rukpak/internal/message"
	"github.com/rukpak/rukpak/internal/metrics"
	"github.com/rukpak/rukpak/internal/permissions"
	"github.com/rukpak/rukpak/internal/sandbox"
	"github.com/rukpak/rukpak/internal/source"
	"github.com/rukpak/rukpak/internal/source/builtin"
	"github.com/rukpak/rukpak/internal/store"
	"github.com/rukpak/rukpak/internal/upload"
	"github.com/rukpak/rukpak/pkg/provisioner"
)

// Options configure the manager.
type Options struct {
	// StorageDir is the content store's directory.
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
	// LeaderElectionNamespace holds the leader-election lease.
	LeaderElectionNamespace string
	// LeaseDuration is how long a leader's lease lasts without renewal:
	// after a leader dies, another replica takes over within about that
	// (plus RetryPeriod). RenewDeadline is how long the leader tries to
	// renew before it gives up leading; RetryPeriod how often replicas
	// try (with jitter, up to 2.2 times as long). Zero means 8s, 6s and 1s: a
	// replica takes over at most about 11s after the leader died.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
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
	// ApprovalTTL is how long an allowed requester is trusted before the
	// next reconcile checks again; 0 means a minute.
	ApprovalTTL time.Duration
	// SourceTimeout bounds resolving and unpacking one source (see
	// source.Registry.WithDeadline); 0 means source.DefaultDeadline.
	SourceTimeout time.Duration
	// StoreQuota bounds the bytes of the content store; content no Bundle
	// references is evicted to make room. 0 means no quota.
	StoreQuota int64
	// TenantStoreQuota bounds the bytes of the content one tenant's
	// revisions reference (see package tenant); 0 means a quarter of
	// StoreQuota, negative no bound but StoreQuota.
	TenantStoreQuota int64
	// SourceConcurrency is how many revisions are unpacked (fetched) at
	// once, TenantSourceConcurrency how many of one tenant's; 0 means
	// content.DefaultFetches and content.DefaultTenantFetches.
	SourceConcurrency, TenantSourceConcurrency int
	// Render bounds the child processes bundles are rendered in (memory,
	// time, how many at once in all and of one tenant; see package
	// sandbox); zero fields are defaults.
	Render sandbox.Limits
	// Provisioners are the provisioners this manager runs; nil means
	// rukpak's built-in ones (plain, registry+v1, Helm), rendering in
	// sandboxed children bounded by Render.
	Provisioners provisioner.Set
	// Classes are ProvisionerClasses created at start when missing; nil
	// means the built-in classes, when Provisioners is nil.
	Classes []v1alpha2.ProvisionerClass
	// LeaderElectionID names the leader-election lease; "" means
	// rukpak-manager. Managers of other provisioners need their own.
	LeaderElectionID string
	// SkipControllerNameValidation lets a process build more than one
	// manager (one after another, as a restart test does); controller
	// names are otherwise unique per process.
	SkipControllerNameValidation bool
}

// The values of Options.DefaultIdentity.
const (
	// IdentityNone: spec.serviceAccount is required.
	IdentityNone = "none"
	// IdentityManager: BundleDeployments without one install as the manager.
	IdentityManager = "manager"
)

// DefaultStoreQuota is the content store's quota cmd/rukpak starts with
// (10 GiB).
const DefaultStoreQuota int64 = 10 << 30

// DefaultOptions are the settings cmd/rukpak starts with.
func DefaultOptions() Options {
	return Options{
		MaxConcurrentReconciles: 16,
		TenantReconciles:        bundledeployment.DefaultTenantReconciles,
		HookWaits:               bundledeployment.DefaultHookWaits,
		TenantHookWaits:         bundledeployment.DefaultTenantHookWaits,
		ApplyConcurrency:        8,
		HealthProbeBindAddress:  ":8081",
		MetricsBindAddress:      ":8443",
		LeaderElectionNamespace: v1alpha2.SystemNamespace,
		DefaultIdentity:         IdentityNone,
		RequireApproval:         true,
		SourceTimeout:           source.DefaultDeadline,
		StoreQuota:              DefaultStoreQuota,
		Render:                  sandbox.DefaultLimits(),
		ServeV1alpha1:           true,
	}
}

// Scheme returns the scheme of every type the manager reads or writes.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme(s); err != nil {
		return nil, err
	}
	if err := v1alpha2.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("adding rukpak types: %w", err)
	}
	// Served for the original README's users, converted by the webhook.
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("adding rukpak v1alpha1 types: %w", err)
	}
	return s, nil
}

// New builds the manager; Start it to run.
func New(cfg *rest.Config, opts Options) (manager.Manager, error) {
	if !opts.ServeV1alpha1 && opts.CRDWebhookBindAddress == "" {
		// The CRD webhook's registrar is what stops serving it.
		return nil, fmt.Errorf("--serve-v1alpha1=false needs the CRD webhook (--crd-webhook-bind-address)")
	}
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	chunk, err := labels.NewRequirement(upload.LabelChunk, selection.DoesNotExist, nil)
	if err != nil {
		return nil, fmt.Errorf("building chunk selector: %w", err)
	}
	notChunk := labels.NewSelector().Add(*chunk)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		HealthProbeBindAddress:  opts.HealthProbeBindAddress,
		PprofBindAddress:        opts.PprofBindAddress,
		Metrics:                 metricsOptions(opts),
		LeaderElection:          opts.LeaderElection,
		LeaderElectionID:        cmp.Or(opts.LeaderElectionID, "rukpak-manager"),
		LeaderElectionNamespace: opts.LeaderElectionNamespace,
		LeaseDuration:           ptr.To(cmp.Or(opts.LeaseDuration, 8*time.Second)),
		RenewDeadline:           ptr.To(cmp.Or(opts.RenewDeadline, 6*time.Second)),
		RetryPeriod:             ptr.To(cmp.Or(opts.RetryPeriod, time.Second)),
		// A leader that stops (not one that dies) hands over at once.
		LeaderElectionReleaseOnCancel: true,
		Controller:                    ctrlconfig.Controller{SkipNameValidation: ptr.To(opts.SkipControllerNameValidation)},
		Cache: cache.Options{
			// managedFields are never read from the cache: dropping them
			// roughly halves what cached objects cost.
			DefaultTransform: cache.TransformStripManagedFields(),
			// Sources and their Secrets are read only from the system
			// namespace; uploaded chunks (up to 100 MiB each upload) are
			// never cached, only read when unpacking.
			ByObject: map[client.Object]cache.ByObject{
				&corev1.ConfigMap{}: {Namespaces: map[string]cache.Config{v1alpha2.SystemNamespace: {}}, Label: notChunk},
				&corev1.Secret{}:    {Namespaces: map[string]cache.Config{v1alpha2.SystemNamespace: {}}},
			},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}

	// Managed objects are watched metadata-only and only when they carry the
	// owner label, in a cache of their own.
	if opts.DefaultIdentity != IdentityNone && opts.DefaultIdentity != IdentityManager {
		return nil, fmt.Errorf("default identity %q: want %s or %s", opts.DefaultIdentity, IdentityNone, IdentityManager)
	}
	mdCfg := rest.CopyConfig(cfg)
	mdCfg.WarningHandlerWithContext = apply.WarningHandler{}
	md, err := apply.NewMetadataClient(mdCfg, mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("creating metadata client: %w", err)
	}
	st, err := store.New(opts.StorageDir, store.WithQuota(opts.StoreQuota), store.WithTenantQuota(tenantStoreQuota(opts)))
	if err != nil {
		return nil, fmt.Errorf("opening content store: %w", err)
	}
	sources, uploads := builtin.Registry(mgr.GetClient(), mgr.GetAPIReader(), v1alpha2.SystemNamespace,
		builtin.WithDeadline(opts.SourceTimeout), builtin.WithWorkDir(st.ScratchDir()))
	if err := addUploadGC(mgr, uploads); err != nil {
		return nil, err
	}
	provisioners, classes := opts.Provisioners, opts.Classes
	if provisioners == nil {
		renderer, err := sandbox.New(opts.Render)
		if err != nil {
			return nil, err
		}
		provisioners = builtins.BuiltinWith(renderer)
		if classes == nil {
			classes = provisionerclass.Builtin
		}
	}
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("creating discovery client: %w", err)
	}
	cluster := clusterinfo.New(dc, clusterinfo.DefaultTTL)
	if err := metrics.RegisterState(mgr.GetClient(), st.Usage); err != nil {
		return nil, err
	}
	unpacker := content.NewUnpacker(st, sources, opts.SourceConcurrency, opts.TenantSourceConcurrency)
	st.SetInUse(unpacker.InUse(mgr.GetClient()))
	ctrlOpts := controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}

	if err := (&provisionerclass.Reconciler{Client: mgr.GetClient(), Provisioners: provisioners}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up ProvisionerClass controller: %w", err)
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		return provisionerclass.CreateClasses(ctx, mgr.GetClient(), classes)
	})); err != nil {
		return nil, fmt.Errorf("adding built-in classes: %w", err)
	}
	if err := addContentServer(mgr, cfg, unpacker, opts); err != nil {
		return nil, err
	}
	contentURL := ""
	if opts.ContentBindAddress != "" {
		contentURL = opts.ContentURL
	}
	kube, err := kubernetes.NewForConfigAndClient(cfg, mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("creating clientset: %w", err)
	}
	var checker *approval.Checker
	if opts.RequireApproval {
		if checker, err = newApprovalChecker(cfg, kube, uploads); err != nil {
			return nil, err
		}
	}
	br := &bundle.Reconciler{Client: mgr.GetClient(), Provisioners: provisioners, Sources: sources, Unpacker: unpacker, ContentURL: contentURL, Cluster: cluster}
	if checker != nil {
		br.Approval = checker
	}
	if err := br.SetupWithManager(mgr, ctrlOpts); err != nil {
		return nil, fmt.Errorf("setting up Bundle controller: %w", err)
	}
	// Managed objects are read uncached, with a client that can also
	// watch (the engine watches the hook Jobs it waits for).
	live, err := client.NewWithWatch(mgr.GetConfig(), client.Options{HTTPClient: mgr.GetHTTPClient(), Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return nil, fmt.Errorf("creating the apply engine's client: %w", err)
	}
	engine := apply.New(mgr.GetClient(), live, md, mgr.GetRESTMapper(), apply.Options{
		FieldManager:     v1alpha2.FieldManager,
		OwnerKind:        v1alpha2.BundleDeploymentKind,
		Keys:             bundledeployment.EngineKeys,
		Concurrency:      opts.ApplyConcurrency,
		EstablishTimeout: time.Minute,
		// The warning events about hook Jobs and Pods it waits for,
		// read as the manager: an install identity may not list events.
		Events: live,
	})
	// Every event fits the API server's limit: a longer note is cut (the
	// full one is logged) instead of refused and lost.
	recorder := message.NewRecorder(mgr.GetEventRecorder("rukpak"), mgr.GetLogger().WithName("events"))
	bdr := &bundledeployment.Reconciler{
		Client:       mgr.GetClient(),
		Provisioners: provisioners,
		Sources:      sources,
		Unpacker:     unpacker,
		Engine:       engine,
		Inventory:    inventory.NewStore(mgr.GetClient(), mgr.GetClient(), v1alpha2.SystemNamespace),
		// Objects are written through metadata clients (see apply.New), so
		// the identities' clients report API warnings like the manager's.
		Identities: identity.NewPool(mdCfg, mgr.GetHTTPClient(), scheme, mgr.GetRESTMapper(),
			&identity.Clients{Client: mgr.GetClient(), Metadata: md}, identity.DefaultSize),
		ManagerIdentity:  opts.DefaultIdentity == IdentityManager,
		ApprovalTTL:      opts.ApprovalTTL,
		Permissions:      &permissions.Checker{Reviews: kube.AuthorizationV1().SubjectAccessReviews()},
		Recorder:         recorder,
		Cluster:          cluster,
		APIReader:        mgr.GetAPIReader(),
		ContentURL:       contentURL,
		TenantReconciles: opts.TenantReconciles,
		HookWaits:        opts.HookWaits,
		TenantHookWaits:  opts.TenantHookWaits,
	}
	bdr.Approval = checker
	if err := bdr.SetupWithManager(mgr, ctrlOpts); err != nil {
		return nil, fmt.Errorf("setting up BundleDeployment controller: %w", err)
	}
	if opts.CRDWebhookBindAddress != "" {
		if err := setupCRDWebhook(mgr, cfg, opts); err != nil {
			return nil, err
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("caches", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return fmt.Errorf("caches not synced")
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("adding ready check: %w", err)
	}
	return mgr, nil
}

// tenantStoreQuota is the quota of one tenant's content: opts'
// TenantStoreQuota, a quarter of the store's quota when that is 0, none
// when it is negative.
func tenantStoreQuota(opts Options) int64 {
	switch {
	case opts.TenantStoreQuota < 0:
		return 0
	case opts.TenantStoreQuota == 0:
		return opts.StoreQuota / 4
	}
	return opts.TenantStoreQuota
}

// metricsOptions serves metrics as opts say: by default over HTTPS,
// authenticated and authorized by the API server.
func metricsOptions(opts Options) metricsserver.Options {
	if opts.MetricsInsecure {
		return metricsserver.Options{BindAddress: opts.MetricsBindAddress}
	}
	return metricsserver.Options{
		BindAddress:    opts.MetricsBindAddress,
		SecureServing:  true,
		CertDir:        opts.MetricsCertDir,
		FilterProvider: filters.WithAuthenticationAndAuthorization,
	}
}

// setupCRDWebhook serves the CRD upgrade-safety webhook, trusting the
// manager's own user: it checks CRD changes itself before applying them.
func setupCRDWebhook(mgr manager.Manager, cfg *rest.Config, opts Options) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	self, err := crdwebhook.CurrentUser(ctx, cfg)
	if err != nil {
		return fmt.Errorf("setting up CRD webhook: %w", err)
	}
	if err := crdwebhook.Setup(mgr, crdwebhook.Options{
		BindAddress:  opts.CRDWebhookBindAddress,
		ServiceName:  opts.CRDWebhookService,
		Namespace:    v1alpha2.SystemNamespace,
		TrustedUsers: []string{self},
		NoV1alpha1:   !opts.ServeV1alpha1,
	}); err != nil {
		return fmt.Errorf("setting up CRD webhook: %w", err)
	}
	return nil
}
