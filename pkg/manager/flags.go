package manager

import (
	"flag"

	internal "github.com/rukpak/rukpak/internal/manager"
)

// BindFlags registers on fs the flags of rukpak's own manager that opts
// holds, with opts' values as defaults: --storage-dir, the addresses and
// TLS of the health probes, metrics, pprof and content server
// (--*-bind-address, --content-url, …), --default-identity,
// --require-approval, leader election (--leader-elect, --leader-election-*),
// concurrency (--max-concurrent-reconciles, --tenant-reconciles,
// --hook-waits, --apply-concurrency, --source-concurrency, …), sources
// (--source-timeout) and the content store's quotas (--store-quota,
// --tenant-store-quota). They are registered by the same function as
// rukpak's manager's, so a provisioner binary that binds them runs where
// rukpak's manager does (`rukpakctl local up --provisioner PATH` passes
// them). --kubeconfig is controller-runtime's own.
func BindFlags(fs *flag.FlagSet, opts *Options) {
	internal.BindEngineFlags(fs, (*internal.EngineOptions)(opts))
}
