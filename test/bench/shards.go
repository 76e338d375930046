package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/localcluster"
)

// projectedBundles and projectedLimitMiB are the shard projection's
// question: how many shards keep each manager of 50,000
// BundleDeployments under 1 GiB of peak RSS.
const (
	projectedBundles  = 50000
	projectedLimitMiB = 1024
)

// watchedManager is a manager process whose memory, CPU and own requests
// a phase measures.
type watchedManager struct {
	name        string
	pid         int
	metricsAddr string
}

// managerStart is a manager's state when a phase starts.
type managerStart struct {
	rssKiB   int64
	cpu      float64
	requests map[string]float64
}

// phaseResult is what one install phase measured.
type phaseResult struct {
	wall     time.Duration
	requests float64 // the API server's, from the moment the BundleDeployments are created
	top      string  // the same by verb and resource
	cluster  string  // CPU seconds of the API server and etcd
	managers []managerFigures
	methods  []string // each manager's requests by method
}

// shardScenario measures, on one cluster in one run, -bundles
// BundleDeployments installed by the one unsharded manager, then as many
// more under fresh names, labelled for -shards shard managers started
// beside it, then -idle with every manager running. It prints the
// figures, their goals and a projection for 50,000 BundleDeployments
// (see shardfigures.go).
func shardScenario(ctx context.Context, c config, cl *localcluster.Cluster, k client.WithWatch, cs kubernetes.Interface, shardArgs []string) error {
	if err := createNamespaces(ctx, k, c); err != nil {
		return err
	}
	pid, err := cl.PID("rukpak")
	if err != nil {
		return err
	}
	cluster, err := cpuProcesses(cl)
	if err != nil {
		return err
	}
	unsharded := watchedManager{name: "one-manager", pid: pid, metricsAddr: c.metricsAddr}

	fmt.Printf("phase one manager: %d BundleDeployments × %d objects, unsharded\n", c.bundles, c.objects)
	one, err := installPhase(ctx, c, k, cs, cluster, 0, nil, []watchedManager{unsharded})
	if err != nil {
		return fmt.Errorf("phase one manager: %w", err)
	}
	one.managers[0].held = c.bundles
	printPhase("one manager", one)

	fmt.Printf("phase %d shards: starting %d shard managers\n", c.shards, c.shards)
	var shards []*shardManager
	defer func() {
		for _, s := range shards {
			s.stop()
		}
	}()
	watched := []watchedManager{{name: "unsharded", pid: pid, metricsAddr: c.metricsAddr}}
	beforeStart, err := readRequestCounts(ctx, cs)
	if err != nil {
		return err
	}
	for i := 0; i < c.shards; i++ {
		s, err := startShardManager(ctx, c, fmt.Sprintf("shard-%d", i), shardArgs)
		if err != nil {
			return err
		}
		shards = append(shards, s)
		watched = append(watched, watchedManager{name: s.name, pid: s.pid(), metricsAddr: s.metricsAddr})
	}
	// Their start (caches listed and watched) is not part of the phase's
	// requests: it does not grow with the BundleDeployments installed.
	afterStart, err := readRequestCounts(ctx, cs)
	if err != nil {
		return err
	}
	fmt.Printf("  %d shard managers started: %s\n", c.shards, afterStart.top(beforeStart, 8))
	label := func(i int) string { return fmt.Sprintf("shard-%d", i%c.shards) }
	sharded, err := installPhase(ctx, c, k, cs, cluster, c.bundles, label, watched)
	if err != nil {
		return fmt.Errorf("phase %d shards: %w", c.shards, err)
	}
	for i := range sharded.managers[1:] {
		sharded.managers[1+i].held = heldBy(c.bundles, c.shards, i)
	}
	printPhase(fmt.Sprintf("%d shards", c.shards), sharded)

	idleWrites, err := shardIdle(ctx, cs, c.idle, watched)
	if err != nil {
		return fmt.Errorf("phase idle: %w", err)
	}

	r := shardResult{bundles: c.bundles, oneRequests: one.requests, shardRequests: sharded.requests, idleWrites: idleWrites,
		one: one.managers[0], unsharded: sharded.managers[0], shards: sharded.managers[1:]}
	fmt.Println()
	for _, l := range r.figures() {
		fmt.Println(l)
	}
	for _, basis := range []string{gStart, gRunning} {
		for _, l := range projectShards(r, projectedBundles, projectedLimitMiB, basis).lines() {
			fmt.Println(l)
		}
	}
	perBD := one.managers[0].perThousandMiB() / 1000
	fmt.Printf("one manager, for comparison: %.1f + %.4f × %d = %.0f MiB (its baseline and growth per BundleDeployment in phase one)\n",
		one.managers[0].baselineMiB, perBD, projectedBundles, one.managers[0].baselineMiB+perBD*projectedBundles)
	return nil
}

// heldBy is how many of n BundleDeployments labelled shard-(i mod k) shard
// s holds.
func heldBy(n, k, s int) int {
	held := n / k
	if s < n%k {
		held++
	}
	return held
}

// installPhase creates the source ConfigMaps of BundleDeployments from
// .. from+bundles-1, then the BundleDeployments (labelled for shard
// label(i) unless label is nil), and waits until all are Installed. It
// measures the wall time and the API server's requests from the
// BundleDeployments' creation, and each manager's RSS (its baseline
// before the sources exist, its peak since), CPU and own requests.
func installPhase(ctx context.Context, c config, k client.WithWatch, cs kubernetes.Interface, cluster *cpuSet, from int,
	label func(i int) string, managers []watchedManager) (phaseResult, error) {
	var r phaseResult
	starts := make([]managerStart, len(managers))
	for i, m := range managers {
		rss, err := procStatus(m.pid, "VmRSS")
		if err != nil {
			return r, err
		}
		if err := resetPeakRSS(m.pid); err != nil {
			return r, fmt.Errorf("resetting the peak RSS of %s: %w", m.name, err)
		}
		req, err := clientRequests(ctx, m.metricsAddr)
		if err != nil {
			return r, err
		}
		starts[i] = managerStart{rssKiB: rss, cpu: cpuSeconds(m.pid), requests: req}
	}
	if err := parallel(c.bundles, c.concurrency, func(i int) error {
		return k.Create(ctx, sourceConfigMap(from+i, c.objects))
	}); err != nil {
		return r, fmt.Errorf("creating source ConfigMaps: %w", err)
	}
	req0, err := readRequestCounts(ctx, cs)
	if err != nil {
		return r, err
	}
	cpu0 := cluster.sample()
	start := time.Now()
	if err := parallel(c.bundles, c.concurrency, func(i int) error {
		bd := bundleDeployment(from+i, c.namespaces)
		if label != nil {
			bd.Labels = map[string]string{v1alpha2.LabelShard: label(i)}
		}
		return k.Create(ctx, bd)
	}); err != nil {
		return r, fmt.Errorf("creating BundleDeployments: %w", err)
	}
	if err := waitInstalled(ctx, k, from+c.bundles, 30*time.Minute); err != nil {
		return r, err
	}
	r.wall = time.Since(start)
	used := cluster.used(cpu0)
	r.cluster = fmt.Sprintf("kube-apiserver %.1f, etcd %.1f", used[1], used[2])
	req1, err := readRequestCounts(ctx, cs)
	if err != nil {
		return r, err
	}
	r.requests, r.top = req1.sum(req0), req1.top(req0, 12)
	for i, m := range managers {
		peak, err := peakRSS(m.pid)
		if err != nil {
			return r, err
		}
		req, err := clientRequests(ctx, m.metricsAddr)
		if err != nil {
			return r, err
		}
		byMethod, total := methodDiff(req, starts[i].requests)
		r.managers = append(r.managers, managerFigures{name: m.name, baselineMiB: float64(starts[i].rssKiB) / 1024, peakMiB: float64(peak) / 1024,
			cpuSeconds: cpuSeconds(m.pid) - starts[i].cpu, requests: total})
		r.methods = append(r.methods, fmt.Sprintf("%s %s", m.name, formatMethods(byMethod, total)))
	}
	return r, nil
}

// formatMethods formats requests by method, largest first.
func formatMethods(byMethod map[string]float64, total float64) string {
	keys := make([]string, 0, len(byMethod))
	for k := range byMethod {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return byMethod[keys[i]] > byMethod[keys[j]] })
	var b strings.Builder
	fmt.Fprintf(&b, "%.0f requests", total)
	for _, k := range keys {
		fmt.Fprintf(&b, "; %s %.0f", k, byMethod[k])
	}
	return b.String()
}

// printPhase prints what a phase measured.
func printPhase(name string, r phaseResult) {
	fmt.Printf("phase %s: all Installed in %s\n", name, r.wall.Round(time.Millisecond))
	fmt.Printf("  API requests (apiserver_request_total): %s\n", r.top)
	fmt.Printf("  CPU seconds: %s\n", r.cluster)
	for i, m := range r.managers {
		fmt.Printf("  %s: holds %d, RSS %.1f MiB before, peak %.1f MiB (+%.1f), CPU %.1f s; its client: %s\n",
			m.name, m.held, m.baselineMiB, m.peakMiB, m.growthMiB(), m.cpuSeconds, r.methods[i])
	}
}

// shardIdle leaves every manager alone for d and returns the write
// requests made meanwhile; it prints the requests per minute, in all and
// of each manager's client.
func shardIdle(ctx context.Context, cs kubernetes.Interface, d time.Duration, managers []watchedManager) (int, error) {
	fmt.Printf("phase idle: %s with %d managers running\n", d, len(managers))
	before, err := readRequestCounts(ctx, cs)
	if err != nil {
		return 0, err
	}
	clients := make([]map[string]float64, len(managers))
	for i, m := range managers {
		if clients[i], err = clientRequests(ctx, m.metricsAddr); err != nil {
			return 0, err
		}
	}
	time.Sleep(d) // the measurement window, not a wait for something
	after, err := readRequestCounts(ctx, cs)
	if err != nil {
		return 0, err
	}
	n, detail := writes(after, before)
	fmt.Printf("  requests per minute: %.0f (%s)\n", after.sum(before)/d.Minutes(), after.top(before, 8))
	if detail != "" {
		fmt.Printf("  writes while idle: %s\n", detail)
	}
	for i, m := range managers {
		now, err := clientRequests(ctx, m.metricsAddr)
		if err != nil {
			return 0, err
		}
		byMethod, total := methodDiff(now, clients[i])
		fmt.Printf("  %s per minute: %s\n", m.name, formatMethods(scale(byMethod, 1/d.Minutes()), total/d.Minutes()))
	}
	return n, nil
}

// scale multiplies every value of m by f.
func scale(m map[string]float64, f float64) map[string]float64 {
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = v * f
	}
	return out
}
