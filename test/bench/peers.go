package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/internal/sourcetree"
)

// row is one scenario of the side-by-side table: its wall time, the CPU
// seconds of each process of cpuSet, the installer's CPU seconds and peak
// RSS (where it is its own process or this one), and the API requests.
type row struct {
	name      string
	wall      time.Duration
	cpu       cpuSample
	installer float64 // CPU seconds of the installer
	rssMiB    float64 // the installer's peak RSS; 0: not measured
	requests  string
	total     float64
}

// self is the bench process in a cpuSet.
const self = 3

// peerPrefixes are the namespace prefixes of the peers' installs.
var peerPrefixes = []string{requestFloorBefore, requestFloorAfter, "helmsdk", "helmcli", fluxPrefix}

// measure runs fn and returns its row; installer says which process of
// procs installs (-1: the processes fn starts, measured as this process's
// children).
func measure(ctx context.Context, name string, procs *cpuSet, cs kubernetes.Interface, installer int, fn func() error) (row, error) {
	fmt.Printf("%s\n", name)
	req0, err := readRequestCounts(ctx, cs)
	if err != nil {
		return row{}, err
	}
	var ru0 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru0)
	cpu0 := procs.sample()
	start := time.Now()
	if err := fn(); err != nil {
		return row{}, fmt.Errorf("%s: %w", name, err)
	}
	r := row{name: name, wall: time.Since(start), cpu: procs.used(cpu0)}
	// Printed at once, so that a later peer's failure leaves it in the log.
	fmt.Printf("  %s: %s\n", name, r.wall.Round(100*time.Millisecond))
	req1, err := readRequestCounts(ctx, cs)
	if err != nil {
		return row{}, err
	}
	r.requests, r.total = req1.top(req0, 8), req1.sum(req0)
	if installer >= 0 {
		r.installer = r.cpu[installer]
		return r, nil
	}
	var ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru1)
	secs := func(ru syscall.Rusage) float64 {
		return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
	}
	r.installer = secs(ru1) - secs(ru0)
	return r, nil
}

// runPeers measures, one after another under fresh names, the request
// floor, the Helm 4 SDK and, if they are built into bin/tools, the Helm 4
// CLI and Flux.
//
// The request floor's row is its run after rukpak's install, its wall time
// the mean of that run and reqFloorBefore, the one before the install.
func runPeers(ctx context.Context, c config, cfg *rest.Config, kubeconfig string, k client.WithWatch, cs kubernetes.Interface, procs *cpuSet, reqFloorBefore time.Duration) ([]row, error) {
	var rows []row
	r, err := measure(ctx, rowRequestFloor, procs, cs, self, func() error { return requestFloorRun(ctx, c, k, requestFloorAfter) })
	if err != nil {
		return nil, err
	}
	fmt.Printf("  request floor: %s before the install, %s after it\n", reqFloorBefore.Round(100*time.Millisecond), r.wall.Round(100*time.Millisecond))
	r.wall = (reqFloorBefore + r.wall) / 2
	rows = append(rows, r)
	// The SDK runs in this process: its peak RSS is reset first (the
	// kernel's clear_refs), so that it is the SDK's, with the bench's own
	// clients (a few MiB).
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		fmt.Printf("  cannot reset this process's peak RSS: %v\n", err)
	}
	r, err = measure(ctx, rowHelmSDK, procs, cs, self, func() error { return helmSDKRun(ctx, c, cfg, kubeconfig) })
	if err != nil {
		return nil, err
	}
	if hwm, err := peakRSS(os.Getpid()); err == nil {
		r.rssMiB = float64(hwm) / 1024
	}
	if err := deployed(ctx, k, "helmsdk", c); err != nil {
		return nil, err
	}
	rows = append(rows, r)
	// The CLI and Flux are other programs: one that fails or does not
	// finish is reported, not measured, and the table is still printed.
	if r, ok, err := helmCLIPeer(ctx, c, kubeconfig, k, cs, procs); err != nil {
		fmt.Printf("Helm 4 CLI: not measured: %v\n", err)
	} else if ok {
		rows = append(rows, r)
	}
	if r, ok, err := fluxPeer(ctx, c, kubeconfig, k, cs, procs); err != nil {
		fmt.Printf("Flux: not measured: %v\n", err)
	} else if ok {
		rows = append(rows, r)
	}
	return rows, nil
}

// helmCLIPeer measures the Helm 4 CLI if it is built; ok is false if it
// is not.
func helmCLIPeer(ctx context.Context, c config, kubeconfig string, k client.Client, cs kubernetes.Interface, procs *cpuSet) (r row, ok bool, err error) {
	helm := filepath.Join(c.toolsDir, "helm")
	if !exists(helm) {
		fmt.Printf("Helm 4 CLI: skipped, %s is not built (make bench-peers builds it)\n", helm)
		return row{}, false, nil
	}
	dir, err := os.MkdirTemp(c.stateDir, "helm-")
	if err != nil {
		return row{}, false, fmt.Errorf("helm directory: %w", err)
	}
	var peak int64
	r, err = measure(ctx, rowHelmCLI, procs, cs, -1, func() (err error) {
		peak, err = helmCLIRun(ctx, c, helm, kubeconfig, dir)
		return err
	})
	if err != nil {
		return row{}, false, err
	}
	r.rssMiB = float64(peak) / 1024
	if err := deployed(ctx, k, "helmcli", c); err != nil {
		return row{}, false, err
	}
	return r, true, nil
}

// fluxPeer measures Flux (source-controller and kustomize-controller as
// local processes) if it is built and starts; ok is false, with the
// reason printed, if it cannot run here.
func fluxPeer(ctx context.Context, c config, kubeconfig string, k client.WithWatch, cs kubernetes.Interface, procs *cpuSet) (r row, ok bool, err error) {
	t, err := findFlux(ctx, sourcetree.Root(), c.toolsDir)
	if err != nil {
		fmt.Printf("Flux: skipped, it cannot run here: %v\n", err)
		return row{}, false, nil
	}
	f, err := fluxPrepare(ctx, c, t, k, kubeconfig, c.fluxRepoPerBundle)
	if err != nil {
		fmt.Printf("Flux: skipped, it cannot run here: %v\n", err)
		return row{}, false, nil
	}
	defer f.stop()
	name := fmt.Sprintf("Flux %s/%s", t.versions[0], t.versions[1])
	pids := f.pids()
	var cpu0 float64
	for _, pid := range pids {
		cpu0 += cpuSeconds(pid)
	}
	r, err = measure(ctx, rowFlux, procs, cs, self, func() error { return f.install(ctx) })
	if err != nil {
		return row{}, false, err
	}
	r.installer = -cpu0
	for _, pid := range pids {
		r.installer += cpuSeconds(pid)
		if hwm, err := peakRSS(pid); err == nil {
			r.rssMiB += float64(hwm) / 1024
		}
	}
	fmt.Printf("  %s (source-controller, kustomize-controller), %d GitRepositor%s\n", name, f.repos, map[bool]string{true: "y", false: "ies"}[f.repos == 1])
	if err := fluxApplied(ctx, k, c); err != nil {
		return row{}, false, err
	}
	return r, true, nil
}

// deployed checks, after the measurement, that Helm recorded every release
// in the namespaces of prefix as deployed.
func deployed(ctx context.Context, k client.Client, prefix string, c config) error {
	n := 0
	for i := 0; i < c.namespaces; i++ {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
		if err := k.List(ctx, list, client.InNamespace(fmt.Sprintf("%s-%d", prefix, i)),
			client.MatchingLabels{"owner": "helm", "status": "deployed"}); err != nil {
			return fmt.Errorf("listing Helm releases: %w", err)
		}
		n += len(list.Items)
	}
	if n != c.bundles {
		return fmt.Errorf("%d releases deployed in %s-*, want %d", n, prefix, c.bundles)
	}
	return nil
}

// peersScenario runs the peers and prints them after rows (the SSA floor
// and rukpak, measured before), against floor.
func peersScenario(ctx context.Context, c config, kubeconfig string, cfg *rest.Config, k client.WithWatch, cs kubernetes.Interface, procs *cpuSet, floor, reqFloorBefore time.Duration, rows []row) error {
	peers, err := runPeers(ctx, c, cfg, kubeconfig, k, cs, procs, reqFloorBefore)
	if err != nil {
		return err
	}
	printTable(append(rows, peers...), floor)
	return nil
}

// exists reports whether path names a file.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// printTable prints rows side by side and evaluates the goals.
func printTable(rows []row, floor time.Duration) {
	fmt.Print("\n" + formatTable(rows, floor))
	for _, g := range goals(rows) {
		fmt.Println(g)
	}
}
