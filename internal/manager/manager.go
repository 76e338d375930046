// Package manager wires rukpak's built-in provisioners into one
// controller-runtime manager: the caches, the content store, the apply
// engine, the inventory and the BundleDeployment, Bundle and
// ProvisionerClass controllers. cmd/rukpak runs it; tests run it in-process
// against a real API server; package github.com/rukpak/rukpak/pkg/manager
// runs it for provisioners outside this repository. EngineOptions are the
// settings of both, whose contract is that package's Options; Options add
// those of what only rukpak's own manager does.
package manager

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
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
	"github.com/rukpak/rukpak/internal/planner"
	"github.com/rukpak/rukpak/internal/renderstore"
	"github.com/rukpak/rukpak/internal/shard"
	"github.com/rukpak/rukpak/internal/source"
	"github.com/rukpak/rukpak/internal/source/builtin"
	"github.com/rukpak/rukpak/internal/source/credentials"
	"github.com/rukpak/rukpak/internal/source/sourcekey"
	"github.com/rukpak/rukpak/internal/store"
	"github.com/rukpak/rukpak/internal/upload"
)

// Scheme returns the scheme of every type the manager reads or writes.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme(s); err != nil {
		return nil, err
	}
	if err := v1alpha2.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("adding rukpak types: %w", err)
	}
	// core.rukpak.io/v1alpha1 (the API of the original RukPak README):
	// served unless ServeV1alpha1 is false, converted by the CRD webhook.
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
	if err := shard.Validate(opts.Shard); err != nil {
		return nil, fmt.Errorf("--shard: %w", err)
	}
	if opts.Shard != "" {
		// The shard's requests are told apart by their user agent (in
		// audit logs); the field manager, its first word, stays rukpak's.
		cfg = rest.CopyConfig(cfg)
		cfg.UserAgent = cmp.Or(cfg.UserAgent, rest.DefaultKubernetesUserAgent()) + " " + shard.UserAgentSuffix(opts.Shard)
	}
	provisioners, classes, err := provisionersOf(opts)
	if err != nil {
		return nil, err
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
	render, err := labels.NewRequirement(renderstore.LabelRenderOf, selection.DoesNotExist, nil)
	if err != nil {
		return nil, fmt.Errorf("building render selector: %w", err)
	}
	notRender := labels.NewSelector().Add(*render)
	// BundleDeployments and Bundles only of the manager's shard.
	byObject := shard.ByObject(opts.Shard)
	byObject[&corev1.ConfigMap{}] = cache.ByObject{Namespaces: map[string]cache.Config{v1alpha2.SystemNamespace: {}}, Label: notChunk}
	byObject[&corev1.Secret{}] = cache.ByObject{Namespaces: map[string]cache.Config{v1alpha2.SystemNamespace: {}}, Label: notRender}
	// The mapper is the cache of what the cluster serves that every
	// client of the manager shares; the BundleDeployment controller
	// invalidates it (see rememberingMapper).
	var mapper *rememberingMapper
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme,
		MapperProvider: func(c *rest.Config, hc *http.Client) (meta.RESTMapper, error) {
			m, err := newMapper(c, hc)
			if err != nil {
				return nil, err
			}
			mapper = m
			return m, nil
		},
		HealthProbeBindAddress:  opts.HealthProbeBindAddress,
		PprofBindAddress:        opts.PprofBindAddress,
		Metrics:                 metricsOptions(opts),
		LeaderElection:          opts.LeaderElection,
		LeaderElectionID:        shard.LeaderElectionID(cmp.Or(opts.LeaderElectionID, "rukpak-manager"), opts.Shard),
		LeaderElectionNamespace: opts.LeaderElectionNamespace,
		LeaseDuration:           ptr.To(cmp.Or(opts.LeaseDuration, DefaultLeaseDuration)),
		RenewDeadline:           ptr.To(cmp.Or(opts.RenewDeadline, DefaultRenewDeadline)),
		RetryPeriod:             ptr.To(cmp.Or(opts.RetryPeriod, DefaultRetryPeriod)),
		// A leader that stops (not one that dies) hands over at once.
		LeaderElectionReleaseOnCancel: true,
		Controller:                    ctrlconfig.Controller{SkipNameValidation: ptr.To(opts.SkipControllerNameValidation)},
		Cache: cache.Options{
			// managedFields are never read from the cache: dropping them
			// roughly halves what cached objects cost.
			DefaultTransform: cache.TransformStripManagedFields(),
			// Sources and their Secrets are read only from the system
			// namespace; uploaded chunks (up to 100 MiB each upload) and
			// stored renders (one per Helm revision kept) are never
			// cached, only read when unpacking or applying.
			ByObject: byObject,
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
	// A tenant's kept renders and its content count against one quota:
	// each side asks the other what the tenant holds there.
	var st *store.Store
	renders := renderstore.New(mgr.GetClient(), mgr.GetAPIReader(), v1alpha2.SystemNamespace, renderstore.Options{
		TenantRenders: opts.TenantRenders,
		TenantQuota:   tenantStoreQuota(opts),
		ContentUsage: func(t string) (int64, error) {
			used, _, err := st.TenantUsage(t)
			return used, err
		},
	})
	st, err = store.New(opts.StorageDir, store.WithQuota(opts.StoreQuota), store.WithTenantQuota(tenantStoreQuota(opts)),
		store.WithTenantExtra(renders.TenantBytes))
	if err != nil {
		return nil, fmt.Errorf("opening content store: %w", err)
	}
	sources, uploads := builtin.Registry(mgr.GetClient(), mgr.GetAPIReader(), v1alpha2.SystemNamespace,
		builtin.WithDeadline(opts.SourceTimeout), builtin.WithWorkDir(st.ScratchDir()))
	if err := addUploadGC(mgr, uploads); err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("creating discovery client: %w", err)
	}
	cluster := clusterinfo.New(dc, clusterinfo.DefaultTTL)
	// What caches the kinds the cluster serves is invalidated when CRDs
	// or APIServices change, and when an apply finds a mapped kind not
	// served.
	kindCaches := []bundledeployment.Invalidator{mapper, cluster}
	kindNotServed := func() {
		for _, c := range kindCaches {
			c.Invalidate()
		}
	}
	if err := metrics.RegisterState(mgr.GetClient(), st.Usage); err != nil {
		return nil, err
	}
	unpacker := newUnpacker(mgr, st, sources, opts)
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
	self, err := whoAmI(cfg)
	if err != nil {
		return nil, err
	}
	checker := newApprovalChecker(self, kube, uploads, opts.RequireApproval)
	br := &bundle.Reconciler{Client: mgr.GetClient(), Provisioners: provisioners, Sources: sources, Unpacker: unpacker, ContentURL: contentURL, Cluster: cluster, Renders: renders}
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
	engineOpts := planner.EngineOptions()
	engineOpts.Concurrency = opts.ApplyConcurrency
	engineOpts.EstablishTimeout = time.Minute
	// The warning events about hook Jobs and Pods it waits for, read as
	// the manager: an install identity may not list events.
	engineOpts.Events = live
	engineOpts.KindNotServed = kindNotServed
	engine := apply.New(mgr.GetClient(), live, md, mgr.GetRESTMapper(), engineOpts)
	// Every event fits the API server's limit: a longer note is cut (the
	// full one is logged) instead of refused and lost.
	recorder := message.NewRecorder(mgr.GetEventRecorder("rukpak"), mgr.GetLogger().WithName("events"))
	bdr := bundledeployment.New(bundledeployment.Options{
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
		SeparateApprover: opts.RequireSeparateApprover,
		Permissions:      &permissions.Checker{Reviews: kube.AuthorizationV1().SubjectAccessReviews()},
		Recorder:         recorder,
		Cluster:          cluster,
		KindCaches:       kindCaches,
		APIReader:        mgr.GetAPIReader(),
		ContentURL:       contentURL,
		Renders:          renders,
		TenantReconciles: opts.TenantReconciles,
		HookWaits:        opts.HookWaits,
		TenantHookWaits:  opts.TenantHookWaits,
		Approval:         checker,
		Self:             self,
		Adopter:          &shard.Adopter{Cache: mgr.GetClient(), API: mgr.GetAPIReader(), Client: mgr.GetClient()},
		Workers:          ctrlOpts.MaxConcurrentReconciles,
	})
	if err := bdr.SetupWithManager(mgr, ctrlOpts); err != nil {
		return nil, fmt.Errorf("setting up BundleDeployment controller: %w", err)
	}
	if err := addShard(mgr, kube, recorder, opts.Shard); err != nil {
		return nil, err
	}
	if opts.CRDWebhookBindAddress != "" {
		if err := setupCRDWebhook(mgr, self.Username, opts); err != nil {
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
// newUnpacker returns the unpacker of sources into st, sharing the
// unpacks of the same pinned sources with the same credentials, and
// tells st what content is in use.
func newUnpacker(mgr manager.Manager, st *store.Store, sources source.Registry, opts Options) *content.Unpacker {
	creds := credentials.NewReader(mgr.GetClient(), v1alpha2.SystemNamespace)
	unpacker := content.NewUnpacker(st, sources, opts.SourceConcurrency, opts.TenantSourceConcurrency,
		content.WithSharing(func(ctx context.Context, pinned []v1alpha2.BundleSource) (string, error) {
			return sourcekey.Of(ctx, creds, pinned)
		}))
	st.SetInUse(unpacker.InUse(mgr.GetClient()))
	return unpacker
}

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
// manager's own user (self): it checks CRD changes itself before applying
// them.
func setupCRDWebhook(mgr manager.Manager, self string, opts Options) error {
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
