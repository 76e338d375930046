package manager

import (
	"flag"
)

// BindFlags registers on fs the flags of rukpak's own manager that opts
// holds, with opts' values as defaults: --storage-dir,
// --health-probe-bind-address, --metrics-bind-address,
// --content-bind-address, --content-url, --default-identity,
// --require-approval, --leader-elect, --source-timeout,
// --max-concurrent-reconciles and --apply-concurrency. A provisioner
// binary that binds them runs where rukpak's manager does (`rukpakctl
// local up --provisioner PATH` passes them). --kubeconfig is
// controller-runtime's own.
func BindFlags(fs *flag.FlagSet, opts *Options) {
	fs.StringVar(&opts.StorageDir, "storage-dir", opts.StorageDir, "directory of the content store")
	fs.StringVar(&opts.HealthProbeBindAddress, "health-probe-bind-address", opts.HealthProbeBindAddress, "address of /healthz and /readyz; 0 turns them off")
	fs.StringVar(&opts.MetricsBindAddress, "metrics-bind-address", opts.MetricsBindAddress, "address of the metrics endpoint; 0 turns it off")
	fs.StringVar(&opts.ContentBindAddress, "content-bind-address", opts.ContentBindAddress, "address of the content server; empty turns it off")
	fs.StringVar(&opts.ContentURL, "content-url", opts.ContentURL, "external base URL of the content server, for Bundles' status.contentURL")
	fs.StringVar(&opts.DefaultIdentity, "default-identity", opts.DefaultIdentity, "who installs BundleDeployments without spec.serviceAccount: none or manager")
	fs.BoolVar(&opts.RequireApproval, "require-approval", opts.RequireApproval, "re-check at reconcile time that whoever changed a BundleDeployment may use its identity, class, Secrets and ConfigMaps")
	fs.BoolVar(&opts.LeaderElection, "leader-elect", opts.LeaderElection, "elect one active replica")
	fs.DurationVar(&opts.SourceTimeout, "source-timeout", opts.SourceTimeout, "how long resolving or fetching one source may take")
	fs.IntVar(&opts.MaxConcurrentReconciles, "max-concurrent-reconciles", opts.MaxConcurrentReconciles, "BundleDeployments reconciled at once")
	fs.IntVar(&opts.TenantReconciles, "tenant-reconciles", opts.TenantReconciles, "BundleDeployments of one tenant (the namespace they install into) reconciled at once, at most")
	fs.IntVar(&opts.ApplyConcurrency, "apply-concurrency", opts.ApplyConcurrency, "objects of one revision applied at once")
}
