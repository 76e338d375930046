package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

// peerPrefixes are the namespace prefixes of the peers' installs.
var peerPrefixes = []string{"reqfloor", "helmsdk", "helmcli"}

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
// floor, the Helm 4 SDK and, if it is built into bin/tools, the Helm 4
// CLI.
func runPeers(ctx context.Context, c config, cfg *rest.Config, kubeconfig string, k client.Client, cs kubernetes.Interface, procs *cpuSet) ([]row, error) {
	const self = 3 // the bench process in procs
	var rows []row
	r, err := measure(ctx, "request floor", procs, cs, self, func() error { return requestFloorRun(ctx, c, k) })
	if err != nil {
		return nil, err
	}
	rows = append(rows, r)
	// The SDK runs in this process: its peak RSS is reset first (the
	// kernel's clear_refs), so that it is the SDK's, with the bench's own
	// clients (a few MiB).
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		fmt.Printf("  cannot reset this process's peak RSS: %v\n", err)
	}
	r, err = measure(ctx, "Helm 4 SDK", procs, cs, self, func() error { return helmSDKRun(ctx, c, cfg, kubeconfig) })
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
	helm := filepath.Join(c.binDir, "tools", "helm")
	if !exists(helm) {
		fmt.Printf("Helm 4 CLI: skipped, %s is not built (make bench-peers builds it)\n", helm)
		return rows, nil
	}
	dir, err := os.MkdirTemp(c.stateDir, "helm-")
	if err != nil {
		return nil, fmt.Errorf("helm directory: %w", err)
	}
	var peak int64
	r, err = measure(ctx, "Helm 4 CLI", procs, cs, -1, func() (err error) {
		peak, err = helmCLIRun(ctx, c, helm, kubeconfig, dir)
		return err
	})
	if err != nil {
		return nil, err
	}
	r.rssMiB = float64(peak) / 1024
	if err := deployed(ctx, k, "helmcli", c); err != nil {
		return nil, err
	}
	return append(rows, r), nil
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
func peersScenario(ctx context.Context, c config, kubeconfig string, cfg *rest.Config, k client.Client, cs kubernetes.Interface, procs *cpuSet, floor time.Duration, rows []row) error {
	peers, err := runPeers(ctx, c, cfg, kubeconfig, k, cs, procs)
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

// printTable prints rows side by side, with each row's wall time against
// the SSA floor's.
func printTable(rows []row, floor time.Duration) {
	fmt.Printf("\n%-14s %9s %8s %9s %9s %7s %8s %10s %8s\n", "scenario", "wall s", "× floor", "requests", "apiserver", "etcd", "manager", "installer", "RSS MiB")
	for _, r := range rows {
		rss := "-"
		if r.rssMiB > 0 {
			rss = fmt.Sprintf("%.0f", r.rssMiB)
		}
		fmt.Printf("%-14s %9.1f %8.2f %9.0f %9.1f %7.1f %8.1f %10.1f %8s\n", r.name, r.wall.Seconds(), r.wall.Seconds()/floor.Seconds(),
			r.total, r.cpu[1], r.cpu[2], r.cpu[0], r.installer, rss)
	}
	fmt.Println("(CPU seconds. The installer is the manager for rukpak, this process for the floors and the SDK, the helm processes together for the CLI;")
	fmt.Println(" its RSS is the peak of the manager, of this process during the SDK run, of the largest helm process. The SSA floor's wall time is")
	fmt.Println(" the mean of its two runs, its CPU and requests those of the run after the install.)")
	for _, r := range rows {
		fmt.Printf("requests, %s: %s\n", r.name, strings.TrimPrefix(r.requests, fmt.Sprintf("%.0f requests; ", r.total)))
	}
}
