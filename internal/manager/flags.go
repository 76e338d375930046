package manager

import (
	"flag"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// BindFlags registers on fs the flags of rukpak's own manager that opts
// holds, with opts' values as defaults: the engine's (BindEngineFlags),
// then its own (BindOwnFlags).
func BindFlags(fs *flag.FlagSet, opts *Options) {
	BindEngineFlags(fs, &opts.EngineOptions)
	BindOwnFlags(fs, opts)
}

// BindOwnFlags registers on fs the flags of what only rukpak's own
// manager does, with opts' values as defaults: its shard, the CRD
// webhook, serving v1alpha1 and the render sandbox. cmd/rukpak binds the engine's through
// package github.com/rukpak/rukpak/pkg/manager, and adds the flags of its
// process (memory, the API client's rate).
func BindOwnFlags(fs *flag.FlagSet, opts *Options) {
	fs.StringVar(&opts.Shard, "shard", opts.Shard, "reconcile only the BundleDeployments labelled core.rukpak.io/shard with this name (a DNS-1123 label), with a leader-election lease of the shard's own; empty: those without the label (see docs/ha.md, Shards)")
	fs.BoolVar(&opts.ServeV1alpha1, "serve-v1alpha1", opts.ServeV1alpha1, "serve core.rukpak.io/v1alpha1, the original README's API, through the CRD webhook's conversion; false (with --crd-webhook-bind-address) stops serving it, which spares each write of a BundleDeployment or Bundle a conversion webhook call (the API server keeps a watch cache per served version)")
	fs.StringVar(&opts.CRDWebhookBindAddress, "crd-webhook-bind-address", opts.CRDWebhookBindAddress, "host:port of the webhook that applies CRD upgrade safety to direct edits of managed CRDs; empty turns it off")
	fs.StringVar(&opts.CRDWebhookService, "crd-webhook-service", opts.CRDWebhookService, "Service in rukpak-system through which the API server calls the CRD webhook; empty: it calls --crd-webhook-bind-address")
	quantityVar(fs, &opts.Render.Memory, "render-memory", "memory one rendering child process may use, as a quantity (default %s); a bundle over it fails with ResourceLimit")
	fs.DurationVar(&opts.Render.Timeout, "render-timeout", opts.Render.Timeout, "CPU time rendering one bundle (Helm, kustomize, manifests) may use in its child process (by the clock it may take ten times that); a bundle over it fails with ResourceLimit")
	fs.IntVar(&opts.Render.Concurrency, "render-concurrency", opts.Render.Concurrency, "renders run at once (each in a child process of at most --render-memory, but for small plain bundles); more renders wait, whatever they render and why (first install, drift correction, content that rendered before)")
	// 0, whatever opts hold: the default follows --render-concurrency.
	fs.IntVar(&opts.Render.TenantConcurrency, "tenant-render-concurrency", 0, "renders of one tenant run at once (default half of --render-concurrency, at least 1); a tenant waiting for its own slots holds none of the others'")
}

// BindEngineFlags registers on fs a flag for each of opts' fields but
// Provisioners, Classes, LeaderElectionID and ApprovalTTL, with opts'
// values as defaults. Every manager of the engine takes them, through
// BindFlags of package github.com/rukpak/rukpak/pkg/manager: rukpak's own
// and one built on that package, so that `rukpakctl local up --provisioner
// PATH` can start either. --kubeconfig is controller-runtime's own.
func BindEngineFlags(fs *flag.FlagSet, opts *EngineOptions) {
	fs.StringVar(&opts.StorageDir, "storage-dir", opts.StorageDir, "directory of the content store")
	fs.IntVar(&opts.MaxConcurrentReconciles, "max-concurrent-reconciles", opts.MaxConcurrentReconciles, "BundleDeployments reconciled at once")
	fs.IntVar(&opts.TenantReconciles, "tenant-reconciles", opts.TenantReconciles, "BundleDeployments of one tenant (the namespace they install into) reconciled at once, at most")
	fs.IntVar(&opts.HookWaits, "hook-waits", opts.HookWaits, "BundleDeployments that wait for Helm hooks without holding a reconcile worker, at most (more hold one)")
	fs.IntVar(&opts.TenantHookWaits, "tenant-hook-waits", opts.TenantHookWaits, "BundleDeployments of one tenant that wait for Helm hooks without holding a reconcile worker, at most")
	fs.IntVar(&opts.ApplyConcurrency, "apply-concurrency", opts.ApplyConcurrency, "objects of one revision applied at once")
	fs.StringVar(&opts.HealthProbeBindAddress, "health-probe-bind-address", opts.HealthProbeBindAddress, "address of /healthz and /readyz; 0 turns them off")
	fs.StringVar(&opts.MetricsBindAddress, "metrics-bind-address", opts.MetricsBindAddress, "address of the metrics endpoint (HTTPS; clients need a token allowed GET on /metrics); 0 turns it off")
	fs.BoolVar(&opts.MetricsInsecure, "metrics-insecure", opts.MetricsInsecure, "serve metrics over plain HTTP without authentication")
	fs.StringVar(&opts.MetricsCertDir, "metrics-cert-dir", opts.MetricsCertDir, "directory of the metrics server's tls.crt and tls.key; empty: a self-signed certificate")
	fs.StringVar(&opts.PprofBindAddress, "pprof-bind-address", opts.PprofBindAddress, "address of Go's /debug/pprof profiles; empty turns them off")
	fs.StringVar(&opts.ContentBindAddress, "content-bind-address", opts.ContentBindAddress, "address of the content server that serves Bundles' unpacked content; empty turns it off")
	fs.StringVar(&opts.ContentURL, "content-url", opts.ContentURL, "external base URL of the content server, for Bundles' status.contentURL")
	fs.StringVar(&opts.ContentTLSCertFile, "content-tls-cert-file", opts.ContentTLSCertFile, "serving certificate of the content server (HTTPS); empty serves HTTP")
	fs.StringVar(&opts.ContentTLSKeyFile, "content-tls-key-file", opts.ContentTLSKeyFile, "key of --content-tls-cert-file")
	fs.StringVar(&opts.DefaultIdentity, "default-identity", opts.DefaultIdentity, "who installs BundleDeployments without spec.serviceAccount: none (they are refused with ServiceAccountRequired) or manager (the manager itself: the cluster-admin mode, see docs/security.md)")
	fs.BoolVar(&opts.RequireApproval, "require-approval", opts.RequireApproval, "re-check at reconcile time that the user who last changed a BundleDeployment's spec may impersonate its identity and use its class, Secrets and ConfigMaps, and that whoever wrote a Bundle (other than the manager) may use its class, Secrets and ConfigMaps (needs the admission policies of config/policy)")
	fs.BoolVar(&opts.RequireSeparateApprover, "require-separate-approver", opts.RequireSeparateApprover, "a revision held by spec.upgrade.approval is applied only when approved by a user other than the one who requested it (annotations core.rukpak.io/approved-by and core.rukpak.io/requested-by differ)")
	fs.BoolVar(&opts.LeaderElection, "leader-elect", opts.LeaderElection, "elect one active replica")
	fs.StringVar(&opts.LeaderElectionNamespace, "leader-election-namespace", opts.LeaderElectionNamespace, "namespace of the leader-election lease")
	fs.DurationVar(&opts.LeaseDuration, "leader-election-lease-duration", opts.LeaseDuration, "how long a leader's lease lasts unrenewed: a replica takes over about that long after the leader dies")
	fs.DurationVar(&opts.RenewDeadline, "leader-election-renew-deadline", opts.RenewDeadline, "how long the leader tries to renew its lease before it stops leading")
	fs.DurationVar(&opts.RetryPeriod, "leader-election-retry-period", opts.RetryPeriod, "how often replicas try to acquire or renew the lease")
	fs.DurationVar(&opts.SourceTimeout, "source-timeout", opts.SourceTimeout, "how long resolving or fetching one source (image, git, http, configMaps, upload) may take; a source that stalls fails with ResourceLimit")
	fs.IntVar(&opts.SourceConcurrency, "source-concurrency", opts.SourceConcurrency, "revisions whose sources are fetched and unpacked at once; more wait")
	fs.IntVar(&opts.TenantSourceConcurrency, "tenant-source-concurrency", opts.TenantSourceConcurrency, "revisions of one tenant fetched and unpacked at once (at most --source-concurrency)")
	quantityVar(fs, &opts.StoreQuota, "store-quota", "bytes the content store may hold, as a quantity such as 10Gi (default %s); content no Bundle references is evicted to make room, and a revision that cannot fit fails with ResourceLimit; 0 turns the quota off")
	fs.IntVar(&opts.TenantRenders, "tenant-renders", opts.TenantRenders, "renders of one tenant's Helm revisions kept in rukpak-system at once (they count against --tenant-store-quota too); a revision past it fails with ResourceLimit (0: 64). BundleDeployments that install as the manager (no serviceAccount) are held to neither bound")
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
}

// quantityVar registers a flag name that sets *p from a quantity such as
// 10Gi; usage has a %s for *p's value, the default.
func quantityVar(fs *flag.FlagSet, p *int64, name, usage string) {
	fs.Func(name, fmt.Sprintf(usage, resource.NewQuantity(*p, resource.BinarySI)), func(v string) error {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return fmt.Errorf("parsing --%s: %w", name, err)
		}
		*p = q.Value()
		return nil
	})
}
