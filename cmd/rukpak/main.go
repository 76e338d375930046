// Command rukpak is the manager: it runs every built-in provisioner (plain,
// registry+v1, Helm) against the cluster of its kubeconfig.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	ownmanager "github.com/rukpak/rukpak/internal/manager"
	"github.com/rukpak/rukpak/internal/memlimit"
	"github.com/rukpak/rukpak/internal/version"
	"github.com/rukpak/rukpak/pkg/manager"
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
	// The engine's settings and flags are those of every manager of the
	// engine, declared by package pkg/manager; own are those of what only
	// this manager does (its built-in formats' sandbox, the CRD webhook,
	// serving v1alpha1). --kubeconfig is registered by controller-runtime:
	// the flag, else $KUBECONFIG, else in-cluster, else ~/.kube/config.
	opts := manager.DefaultOptions()
	opts.StorageDir = "/var/cache/rukpak"
	own := ownmanager.DefaultOptions()
	fs := flag.CommandLine
	manager.BindFlags(fs, &opts)
	ownmanager.BindOwnFlags(fs, &own)
	var qps float64
	var burst int
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
	own.EngineOptions = ownmanager.EngineOptions(opts)
	mgr, err := ownmanager.New(cfg, own)
	if err != nil {
		return err
	}
	ctx := ctrl.SetupSignalHandler()
	go memlimit.Watch(ctx, memoryCheckInterval, func(live, limit int64) {
		ctrl.Log.Info("the live heap is near the soft memory limit: the garbage collector runs ever more often, and every reconcile costs more CPU; "+
			"raise --memory-limit, and the container's memory limit with it (docs/ha.md, sizing)",
			"liveHeap", memlimit.String(live), "limit", memlimit.String(limit))
	})
	return mgr.Start(ctx)
}

// memoryCheckInterval is how often the manager compares its live heap
// with its soft memory limit.
const memoryCheckInterval = 30 * time.Second
