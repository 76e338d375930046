// Command rukpak is the manager: it runs every built-in provisioner (plain,
// and the classes later issues add) against the cluster of its kubeconfig.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/rukpak/rukpak/internal/content"
	"github.com/rukpak/rukpak/internal/manager"
	"github.com/rukpak/rukpak/internal/memlimit"
	"github.com/rukpak/rukpak/internal/version"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "rukpak:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) == 2 && (os.Args[1] == "version" || os.Args[1] == "--version") {
		fmt.Println("rukpak", version.Get())
		return nil
	}
	opts := manager.DefaultOptions()
	var qps float64
	var burst int
	fs := flag.CommandLine
	// --kubeconfig is registered by controller-runtime: the flag, else
	// $KUBECONFIG, else in-cluster, else ~/.kube/config.
	fs.StringVar(&opts.StorageDir, "storage-dir", "/var/cache/rukpak", "directory of the content store")
	fs.IntVar(&opts.MaxConcurrentReconciles, "max-concurrent-reconciles", opts.MaxConcurrentReconciles, "BundleDeployments reconciled at once")
	fs.IntVar(&opts.TenantReconciles, "tenant-reconciles", opts.TenantReconciles, "BundleDeployments of one tenant (the namespace they install into) reconciled at once, at most")
	fs.IntVar(&opts.HookWaits, "hook-waits", opts.HookWaits, "BundleDeployments that wait for Helm hooks without holding a reconcile worker, at most (more hold one)")
	fs.IntVar(&opts.TenantHookWaits, "tenant-hook-waits", opts.TenantHookWaits, "BundleDeployments of one tenant that wait for Helm hooks without holding a reconcile worker, at most")
	fs.IntVar(&opts.ApplyConcurrency, "apply-concurrency", opts.ApplyConcurrency, "objects of one revision applied at once")
	fs.StringVar(&opts.HealthProbeBindAddress, "health-probe-bind-address", opts.HealthProbeBindAddress, "address of /healthz and /readyz")
	fs.StringVar(&opts.MetricsBindAddress, "metrics-bind-address", opts.MetricsBindAddress, "address of the metrics endpoint (HTTPS; clients need a token allowed GET on /metrics); 0 turns it off")
	fs.BoolVar(&opts.MetricsInsecure, "metrics-insecure", false, "serve metrics over plain HTTP without authentication")
	fs.StringVar(&opts.MetricsCertDir, "metrics-cert-dir", "", "directory of the metrics server's tls.crt and tls.key; empty: a self-signed certificate")
	fs.StringVar(&opts.PprofBindAddress, "pprof-bind-address", "", "address of Go's /debug/pprof profiles; empty turns them off")
	fs.StringVar(&opts.ContentBindAddress, "content-bind-address", "", "address of the content server that serves Bundles' unpacked content; empty turns it off")
	fs.StringVar(&opts.ContentURL, "content-url", "", "external base URL of the content server, for Bundles' status.contentURL")
	fs.StringVar(&opts.ContentTLSCertFile, "content-tls-cert-file", "", "serving certificate of the content server (HTTPS); empty serves HTTP")
	fs.StringVar(&opts.ContentTLSKeyFile, "content-tls-key-file", "", "key of --content-tls-cert-file")
	fs.BoolVar(&opts.ServeV1alpha1, "serve-v1alpha1", opts.ServeV1alpha1, "serve core.rukpak.io/v1alpha1, the original README's API, through the CRD webhook's conversion; false (with --crd-webhook-bind-address) stops serving it, which spares each write of a BundleDeployment or Bundle a conversion webhook call (the API server keeps a watch cache per served version)")
	fs.StringVar(&opts.CRDWebhookBindAddress, "crd-webhook-bind-address", "", "host:port of the webhook that applies CRD upgrade safety to direct edits of managed CRDs; empty turns it off")
	fs.StringVar(&opts.CRDWebhookService, "crd-webhook-service", "", "Service in rukpak-system through which the API server calls the CRD webhook; empty: it calls --crd-webhook-bind-address")
	fs.StringVar(&opts.DefaultIdentity, "default-identity", opts.DefaultIdentity, "who installs BundleDeployments without spec.serviceAccount: none (they are refused with ServiceAccountRequired) or manager (the manager itself: the cluster-admin mode, see docs/security.md)")
	fs.BoolVar(&opts.RequireApproval, "require-approval", opts.RequireApproval, "re-check at reconcile time that the user who last changed a BundleDeployment's spec may impersonate its identity and use its class, Secrets and ConfigMaps, and that whoever wrote a Bundle (other than the manager) may use its class, Secrets and ConfigMaps (needs the admission policies of config/policy)")
	fs.BoolVar(&opts.LeaderElection, "leader-elect", false, "elect one active replica")
	fs.StringVar(&opts.LeaderElectionNamespace, "leader-election-namespace", opts.LeaderElectionNamespace, "namespace of the leader-election lease")
	fs.DurationVar(&opts.LeaseDuration, "leader-election-lease-duration", 8*time.Second, "how long a leader's lease lasts unrenewed: a replica takes over about that long after the leader dies")
	fs.DurationVar(&opts.RenewDeadline, "leader-election-renew-deadline", 6*time.Second, "how long the leader tries to renew its lease before it stops leading")
	fs.DurationVar(&opts.RetryPeriod, "leader-election-retry-period", time.Second, "how often replicas try to acquire or renew the lease")
	fs.DurationVar(&opts.SourceTimeout, "source-timeout", opts.SourceTimeout, "how long resolving or fetching one source (image, git, http, configMaps, upload) may take; a source that stalls fails with ResourceLimit")
	fs.Func("store-quota", fmt.Sprintf("bytes the content store may hold, as a quantity such as 10Gi (default %s); content no Bundle references is evicted to make room, and a revision that cannot fit fails with ResourceLimit; 0 turns the quota off",
		resource.NewQuantity(opts.StoreQuota, resource.BinarySI)), func(v string) error {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return fmt.Errorf("parsing --store-quota: %w", err)
		}
		opts.StoreQuota = q.Value()
		return nil
	})
	fs.Func("tenant-store-quota", "bytes of content one tenant's revisions (the BundleDeployments installing as ServiceAccounts of one namespace; those installing as the manager are one tenant) may hold in the content store, as a quantity such as 2560Mi (default a quarter of --store-quota); a revision over it fails with ResourceLimit naming what holds the tenant's quota; negative: no bound but --store-quota",
		func(v string) error {
			if strings.HasPrefix(v, "-") {
				opts.TenantStoreQuota = -1
				return nil
			}
			q, err := resource.ParseQuantity(v)
			if err != nil {
				return fmt.Errorf("parsing --tenant-store-quota: %w", err)
			}
			opts.TenantStoreQuota = q.Value()
			return nil
		})
	fs.IntVar(&opts.SourceConcurrency, "source-concurrency", content.DefaultFetches, "revisions whose sources are fetched and unpacked at once; more wait")
	fs.IntVar(&opts.TenantSourceConcurrency, "tenant-source-concurrency", content.DefaultTenantFetches, "revisions of one tenant fetched and unpacked at once (at most --source-concurrency)")
	fs.Func("render-memory", fmt.Sprintf("memory one rendering child process may use, as a quantity (default %s); a bundle over it fails with ResourceLimit",
		resource.NewQuantity(opts.Render.Memory, resource.BinarySI)), func(v string) error {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return fmt.Errorf("parsing --render-memory: %w", err)
		}
		opts.Render.Memory = q.Value()
		return nil
	})
	fs.DurationVar(&opts.Render.Timeout, "render-timeout", opts.Render.Timeout, "how long rendering one bundle (Helm, kustomize, manifests) may take in its child process; a bundle over it fails with ResourceLimit")
	fs.IntVar(&opts.Render.Concurrency, "render-concurrency", opts.Render.Concurrency, "renders run at once (each in a child process of at most --render-memory, but for small plain bundles); more renders wait, whatever they render and why (first install, drift correction, content that rendered before)")
	fs.IntVar(&opts.Render.TenantConcurrency, "tenant-render-concurrency", 0, "renders of one tenant run at once (default half of --render-concurrency, at least 1); a tenant waiting for its own slots holds none of the others'")
	var memoryLimit int64
	fs.Func("memory-limit", fmt.Sprintf("soft memory limit of the manager's Go runtime, as a quantity such as 256Mi; near it the garbage collector works harder instead of the process growing (default: GOMEMLIMIT if set, else %s or 85%% of the cgroup's memory limit if that is less)",
		resource.NewQuantity(memlimit.Default, resource.BinarySI)), func(v string) error {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return fmt.Errorf("parsing --memory-limit: %w", err)
		}
		memoryLimit = q.Value()
		return nil
	})
	gcPercent := -1
	fs.IntVar(&gcPercent, "gc-percent", -1, fmt.Sprintf("the garbage collector's target: how far the heap grows, in percent of the live heap, before the next collection (default: GOGC if set, else %d)", memlimit.DefaultGCPercent))
	fs.Float64Var(&qps, "kube-api-qps", 1000, "client-side request rate limit; the API server's own flow control still applies")
	fs.IntVar(&burst, "kube-api-burst", 2000, "client-side request burst")
	zopts := zap.Options{}
	zopts.BindFlags(fs)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zopts)))
	limit, from := memlimit.Set(memoryLimit)
	ctrl.Log.Info("soft memory limit", "limit", memlimit.String(limit), "from", from)
	percent, from := memlimit.SetGCPercent(gcPercent)
	ctrl.Log.Info("garbage collector target", "percent", percent, "from", from)

	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = float32(qps), burst
	mgr, err := manager.New(cfg, opts)
	if err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
