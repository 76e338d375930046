// Command bench measures how fast rukpak installs plain bundles compared
// with the floor: a plain Go client server-side applying the same number of
// objects with the same concurrency, against the same local cluster in the
// same run. It prints both times, their ratio and the manager's peak RSS.
//
//	go run ./test/bench -bundles 1000 -objects 10
//
// With -peers it also measures, in the same run and on the same content,
// the request floor (a bare client making rukpak's requests, see
// requestfloor.go), the Helm 4 SDK, the Helm 4 CLI and Flux (see flux.go),
// and prints them side by side with the goals evaluated (see peers.go and
// table.go).
//
//	go run ./test/bench -bundles 1000 -objects 10 -peers
//
// With -churn N it measures identity churn instead: N BundleDeployments,
// each installed as a different ServiceAccount, are created and deleted,
// and the manager's heap and RSS before, at the peak and after are printed
// (see churn.go).
//
//	go run ./test/bench -churn 1000
//
// With -shards K it measures sharding instead: -bundles BundleDeployments
// installed by the one unsharded manager, then as many more labelled for K
// shard managers started beside it, then -idle with all running; it
// compares their requests and memory and projects how many shards 50,000
// BundleDeployments need (see shards.go).
//
//	go run ./test/bench -shards 3 -bundles 1000 -idle 1m
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/localcluster"
	"github.com/rukpak/rukpak/internal/sourcetree"
	"github.com/rukpak/rukpak/pkg/envtest"
)

type config struct {
	bundles, objects, concurrency, namespaces int
	// requester is the requested-by annotations the manager writes on its
	// Bundles (who the bench's clients, which act as the manager, are);
	// set once the cluster is up, with -peers.
	requester        map[string]string
	stateDir, binDir string
	// toolsDir holds the peers' binaries (helm, the Flux controllers).
	toolsDir         string
	keep             bool
	pprof            string
	profileSeconds   int
	managerArgs      []string
	applyConcurrency int
	churn            int
	churnRounds      int
	churnSettle      time.Duration
	// after are the scenarios run once everything is installed.
	after       string
	big         int
	costs       int
	sa          bool
	idle        time.Duration
	driftEdits  int
	managerPath string
	metricsAddr string
	// peers: measure the request floor, Helm and Flux in the same run.
	peers bool
	// fluxRepoPerBundle: Flux reads one GitRepository per bundle instead
	// of one for all.
	fluxRepoPerBundle bool
	// fluxTimeout bounds Flux's install.
	fluxTimeout time.Duration
	// follow: instead, BundleDeployments following one chart of a Helm
	// repository whose index is followIndexMiB MiB, idle for followIdle.
	follow         int
	followIndexMiB int
	followIdle     time.Duration
	// shards: instead, the install by one manager, then by this many
	// shard managers beside it, then idle (see shards.go).
	shards int
}

func main() {
	var c config
	flag.IntVar(&c.bundles, "bundles", 1000, "BundleDeployments to create")
	flag.IntVar(&c.objects, "objects", 10, "objects (ConfigMaps) per bundle")
	flag.IntVar(&c.concurrency, "concurrency", 16, "concurrent reconciles of the manager, and workers of the floor client")
	flag.IntVar(&c.namespaces, "namespaces", 10, "install namespaces the bundles are spread over")
	flag.StringVar(&c.stateDir, "state-dir", "", "local cluster state (default: a temporary directory)")
	flag.StringVar(&c.binDir, "bin-dir", "", "directory of rukpak and the control-plane binaries (default: bin/, where the bench builds rukpak from the tree first)")
	flag.StringVar(&c.toolsDir, "tools-dir", "", "directory of the peers' binaries, helm and the Flux controllers (default: bin/tools)")
	flag.BoolVar(&c.keep, "keep", false, "leave the cluster running")
	flag.IntVar(&c.applyConcurrency, "apply-concurrency", 0, "the manager's --apply-concurrency (0: its default)")
	flag.Func("manager-arg", "an extra flag of the manager, such as --memory-limit=128Mi (repeatable)", func(v string) error {
		c.managerArgs = append(c.managerArgs, v)
		return nil
	})
	flag.StringVar(&c.pprof, "pprof", "", "serve the manager's pprof profiles on this address (e.g. 127.0.0.1:6065)")
	flag.IntVar(&c.profileSeconds, "profile-seconds", 8, "with -pprof: how many seconds of the install to profile, from the moment every BundleDeployment is created")
	flag.IntVar(&c.churn, "churn", 0, "instead: create and delete this many BundleDeployments, each as its own ServiceAccount, and compare the manager's memory before and after")
	flag.IntVar(&c.churnRounds, "churn-rounds", 1, "with -churn: how many times to create and delete them")
	flag.DurationVar(&c.churnSettle, "churn-settle", 2*time.Minute, "with -churn: how long the manager is left alone before each measurement (idle connections close after 90s)")
	flag.IntVar(&c.big, "big", 0, "instead: install one bundle of this many objects (a mix of kinds, about 5 KB each) and measure it, and an upgrade of 1 % of them, against the floor")
	flag.IntVar(&c.costs, "costs", 0, "instead: measure what each kind of request the install makes costs the cluster, this many requests of each")
	flag.BoolVar(&c.sa, "sa", false, "install-sa: each BundleDeployment installs as its own ServiceAccount (least privilege: preflight reviews and impersonation)")
	flag.StringVar(&c.after, "after", "", "scenarios to run, in order, once the install is measured: drift, drift-upgrade, restart, idle (comma-separated)")
	flag.DurationVar(&c.idle, "idle", 5*time.Minute, "with -after idle: how long to leave the cluster alone")
	flag.IntVar(&c.driftEdits, "drift-edits", 200, "with -after drift: managed objects edited or deleted, one every 50 ms")
	flag.BoolVar(&c.peers, "peers", false, "also measure, after the install and on the same content, the request floor (a bare client making rukpak's requests), the Helm 4 SDK, the Helm 4 CLI (if bin/tools/helm is built) and Flux (if make flux built it), and print them side by side")
	flag.DurationVar(&c.fluxTimeout, "flux-timeout", 30*time.Minute, "with -peers: how long Flux may take before it is reported as not measured")
	flag.BoolVar(&c.fluxRepoPerBundle, "flux-repo-per-bundle", false, "with -peers: Flux reads one GitRepository per bundle (default: one GitRepository, a directory per bundle)")
	flag.IntVar(&c.follow, "follow", 0, "instead: this many BundleDeployments follow the range 1.x of one chart of a Helm repository served by the bench; measure the install, the index requests while idle, and the upgrade when 1.1.0 is published")
	flag.IntVar(&c.followIndexMiB, "follow-index-mib", 50, "with -follow: the size of the repository's index.yaml in MiB (large public repositories' are about 50)")
	flag.DurationVar(&c.followIdle, "follow-idle", time.Minute, "with -follow: how long the followers are left to poll before the upgrade is published")
	flag.IntVar(&c.shards, "shards", 0, "instead: install -bundles BundleDeployments with the one unsharded manager, then as many more labelled for this many shard managers started beside it, then leave all alone for -idle; compare their requests and memory, and project the shards 50,000 BundleDeployments need")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// buildManager builds the manager of the source tree at root into path,
// static as make build and the release build it (a no-op when the build
// cache has it).
func buildManager(root, path string) error {
	build := exec.Command("go", "build", "-o", path, "./cmd/rukpak")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building the manager: %w\n%s", err, out)
	}
	return nil
}

func run(c config) error {
	ctx := context.Background()
	root := sourcetree.Root()
	if c.binDir == "" {
		c.binDir = filepath.Join(root, "bin")
		// The tree's manager, not one an earlier build left in bin/.
		if err := buildManager(root, filepath.Join(c.binDir, "rukpak")); err != nil {
			return err
		}
	}
	if c.toolsDir == "" {
		c.toolsDir = filepath.Join(c.binDir, "tools")
	}
	if c.stateDir == "" {
		dir, err := os.MkdirTemp("", "rukpak-bench-")
		if err != nil {
			return err
		}
		c.stateDir = dir
	}
	if c.churn > 0 && c.pprof == "" {
		// The churn measurement reads the manager's heap from pprof.
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		c.pprof = addr
	}
	metricsAddr, err := freeAddr()
	if err != nil {
		return err
	}
	c.metricsAddr = metricsAddr
	c.managerPath = filepath.Join(c.binDir, "rukpak")
	managerArgs := []string{fmt.Sprintf("--max-concurrent-reconciles=%d", c.concurrency), "--pprof-bind-address=" + c.pprof,
		// Plain HTTP on loopback: the restart scenario reads the
		// reconcile counts without a token.
		"--metrics-bind-address=" + c.metricsAddr, "--metrics-insecure"}
	if c.applyConcurrency > 0 {
		managerArgs = append(managerArgs, fmt.Sprintf("--apply-concurrency=%d", c.applyConcurrency))
	}
	managerArgs = append(managerArgs, c.managerArgs...)
	fmt.Printf("starting a minimal local cluster in %s\n", c.stateDir)
	cl, err := localcluster.Up(ctx, localcluster.Options{
		StateDir:    c.stateDir,
		BinDir:      filepath.Join(c.binDir, "cluster"),
		ManagerPath: filepath.Join(c.binDir, "rukpak"),
		Minimal:     true,
		ManagerArgs: managerArgs,
		Out:         os.Stdout,
	})
	if err != nil {
		return fmt.Errorf("starting local cluster: %w", err)
	}
	if !c.keep {
		defer func() { _ = localcluster.Down(c.stateDir) }()
	}
	// Every client of the bench (the floors, the Helm SDK and CLI, Flux)
	// authenticates as the manager does, with a bearer token: a client
	// certificate costs the API server a chain verification on every
	// request, which would charge the others for what rukpak does not pay.
	cfg, err := clientcmd.BuildConfigFromFlags("", cl.TokenKubeconfig)
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = -1, 0 // no client-side limit: measure the server
	k, err := client.NewWithWatch(cfg, client.Options{Scheme: envtest.Scheme()})
	if err != nil {
		return err
	}
	if ran, err := runInstead(ctx, c, cl, k, cfg, managerArgs); ran {
		return err
	}
	if c.churn > 0 {
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		return runChurn(ctx, c, cl, k, cs)
	}

	fmt.Printf("preparing %d bundles × %d objects\n", c.bundles, c.objects)
	if err := createNamespaces(ctx, k, c); err != nil {
		return err
	}
	if c.sa {
		if err := installers(ctx, k, c); err != nil {
			return err
		}
	}
	if err := parallel(c.bundles, c.concurrency, func(i int) error {
		return k.Create(ctx, sourceConfigMap(i, c.objects))
	}); err != nil {
		return fmt.Errorf("creating source ConfigMaps: %w", err)
	}

	procs, err := cpuProcesses(cl)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}

	// The floor, once before and once after the install (the machine's
	// speed drifts; the ratio is against the mean of both): the same
	// objects, server-side applied by a plain client.
	floorBefore, cpuFloorBefore, _, err := floorRun(ctx, c, k, procs, "before")
	if err != nil {
		return err
	}
	// With -peers, the request floor too (requestFloorRun).
	var reqFloorBefore time.Duration
	if c.peers {
		if c.requester, err = managerRequester(ctx, cfg); err != nil {
			return err
		}
		fmt.Println("request floor, before the install")
		start := time.Now()
		if err := requestFloorRun(ctx, c, k, requestFloorBefore); err != nil {
			return err
		}
		reqFloorBefore = time.Since(start)
	}
	req0, err := readRequestCounts(ctx, cs)
	if err != nil {
		return err
	}

	// rukpak: create every BundleDeployment, wait until all are Installed.
	cpu0 := procs.sample()
	start := time.Now()
	if err := parallel(c.bundles, c.concurrency, func(i int) error {
		bd := bundleDeployment(i, c.namespaces)
		if c.sa {
			bd.Spec.ServiceAccount = &v1alpha2.ServiceAccountReference{Name: fmt.Sprintf("bench-%d", i)}
		}
		return k.Create(ctx, bd)
	}); err != nil {
		return fmt.Errorf("creating BundleDeployments: %w", err)
	}
	created := time.Since(start)
	// -profile-seconds (8) of the install, from the moment every
	// BundleDeployment is created.
	profiled := profileInstall(ctx, c, cs, c.profileSeconds, "install")
	if err := waitInstalled(ctx, k, c.bundles, 30*time.Minute); err != nil {
		return err
	}
	rukpak := time.Since(start)
	cpuRukpakUsed := procs.used(cpu0)
	if err := <-profiled; err != nil {
		return err
	}
	req1, err := readRequestCounts(ctx, cs)
	if err != nil {
		return err
	}
	pid, err := cl.PID("rukpak")
	if err != nil {
		return err
	}
	rss, err := peakRSS(pid)
	if err != nil {
		return err
	}
	anon, file, err := rssParts(pid)
	if err != nil {
		return err
	}

	floorAfter, cpuFloor, cpuFloorAfter, err := floorRun(ctx, c, k, procs, "after")
	if err != nil {
		return err
	}
	floor := (floorBefore + floorAfter) / 2
	req2, err := readRequestCounts(ctx, cs)
	if err != nil {
		return err
	}

	objects := c.bundles * c.objects
	fmt.Printf("\nbundles=%d objects/bundle=%d objects=%d concurrency=%d\n", c.bundles, c.objects, objects, c.concurrency)
	fmt.Printf("rukpak: all Installed in %s (%.0f objects/s; the BundleDeployments were created in the first %s)\n", rukpak.Round(time.Millisecond), float64(objects)/rukpak.Seconds(), created.Round(time.Millisecond))
	fmt.Printf("floor:  %d server-side applies in %s (%.0f objects/s; %s before the install, %s after it)\n", objects, floor.Round(time.Millisecond), float64(objects)/floor.Seconds(),
		floorBefore.Round(time.Millisecond), floorAfter.Round(time.Millisecond))
	// The goals are against the request floor and the peers (-peers,
	// docs/bench.md); the ratio to the SSA floor is reported.
	fmt.Printf("ratio:  %.2f to the SSA floor\n", rukpak.Seconds()/floor.Seconds())
	fmt.Printf("manager peak RSS: %.1f MiB (goal ≤ 150); after the install %.1f MiB anonymous (heap, stacks) + %.1f MiB file pages (the binary)\n",
		float64(rss)/1024, float64(anon)/1024, float64(file)/1024)
	fmt.Printf("CPU seconds, rukpak run: %s\n", procs.format(cpuRukpakUsed))
	fmt.Printf("CPU seconds, floor runs: %s (before); %s (after)\n", cpuFloorBefore, cpuFloor)
	fmt.Printf("API requests, rukpak run: %s\n", req1.top(req0, 12))
	fmt.Printf("API requests, floor run:  %s\n", req2.top(req1, 4))
	if c.sa {
		figure("install-sa", "ratio", fmt.Sprintf("%.2f", rukpak.Seconds()/floor.Seconds()), "(report)", true)
		figure("install-sa", "peak-rss-mib", fmt.Sprintf("%.0f", float64(rss)/1024), "(report)", true)
	} else {
		figure("install", "ratio", fmt.Sprintf("%.2f", rukpak.Seconds()/floor.Seconds()), "(report)", true)
		figure("install", "peak-rss-mib", fmt.Sprintf("%.0f", float64(rss)/1024), "<=150", float64(rss)/1024 <= 150)
	}
	if err := afterScenarios(ctx, c, cl, k, cs, managerArgs); err != nil {
		return err
	}
	if c.peers {
		return peersScenario(ctx, c, cl.TokenKubeconfig, cfg, k, cs, procs, floor, reqFloorBefore, []row{
			{name: rowSSAFloor, wall: floor, cpu: cpuFloorAfter, installer: cpuFloorAfter[3], requests: req2.top(req1, 8), total: req2.sum(req1)},
			{name: rowRukpak, wall: rukpak, cpu: cpuRukpakUsed, installer: cpuRukpakUsed[0], rssMiB: float64(rss) / 1024, requests: req1.top(req0, 8), total: req1.sum(req0)},
		})
	}
	return nil
}

// runInstead runs the scenario that replaces the throughput run, if a
// flag asks for one (-big, -costs, -follow, -shards); ran is false if
// none does.
func runInstead(ctx context.Context, c config, cl *localcluster.Cluster, k client.WithWatch, cfg *rest.Config, managerArgs []string) (ran bool, err error) {
	if c.big <= 0 && c.costs <= 0 && c.follow <= 0 && c.shards <= 0 {
		return false, nil
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return true, err
	}
	switch {
	case c.big > 0:
		return true, bigScenario(ctx, c, cl, k, cs)
	case c.costs > 0:
		return true, costsScenario(ctx, c, cl, k, cfg, cs)
	case c.follow > 0:
		return true, followScenario(ctx, c, cl, k, cs)
	}
	// The shard managers get the flags of the unsharded one but its
	// pprof and metrics addresses (each has its own metrics).
	var shardArgs []string
	for _, a := range managerArgs {
		if !strings.HasPrefix(a, "--pprof-bind-address=") && !strings.HasPrefix(a, "--metrics-bind-address=") && a != "--metrics-insecure" {
			shardArgs = append(shardArgs, a)
		}
	}
	return true, shardScenario(ctx, c, cl, k, cs, shardArgs)
}

// afterScenarios runs the scenarios of -after, in order.
func afterScenarios(ctx context.Context, c config, cl *localcluster.Cluster, k client.WithWatch, cs *kubernetes.Clientset, managerArgs []string) error {
	for _, s := range strings.Split(c.after, ",") {
		var err error
		switch strings.TrimSpace(s) {
		case "":
			continue
		case "drift":
			err = driftScenario(ctx, c, k, cs, c.driftEdits, 50*time.Millisecond)
		case "restart":
			err = restartScenario(ctx, c, cl, cs, managerArgs)
		case "idle":
			err = idleScenario(ctx, cs, c.idle)
		case "drift-upgrade":
			err = driftUpgradeScenario(ctx, c, k, cs, 50*time.Millisecond)
		default:
			err = fmt.Errorf("unknown scenario %q (want drift, drift-upgrade, restart or idle)", s)
		}
		if err != nil {
			return fmt.Errorf("scenario %s: %w", s, err)
		}
	}
	return nil
}

// createNamespaces creates the install namespaces of rukpak, the floor
// and, with -peers, the peers.
func createNamespaces(ctx context.Context, k client.Client, c config) error {
	prefixes := []string{"bench", "floor"}
	if c.peers {
		prefixes = append(prefixes, peerPrefixes...)
	}
	for i := 0; i < c.namespaces; i++ {
		for _, prefix := range prefixes {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, i)}}
			if err := k.Create(ctx, ns); err != nil {
				return fmt.Errorf("creating namespace: %w", err)
			}
		}
	}
	return nil
}

// sourceConfigMap is bundle i's first revision: objects ConfigMaps.
func sourceConfigMap(i, objects int) *corev1.ConfigMap {
	return sourceRevision(fmt.Sprintf("bench-%d", i), i, objects, "")
}

// sourceRevision is an immutable source ConfigMap name holding bundle
// i's objects ConfigMaps, each with the data key revision set to rev
// when rev is not "".
func sourceRevision(name string, i, objects int, rev string) *corev1.ConfigMap {
	var b strings.Builder
	for j := 0; j < objects; j++ {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b%d-o%d\ndata:\n  index: \"%d\"\n", i, j, j)
		if rev != "" {
			fmt.Fprintf(&b, "  revision: %q\n", rev)
		}
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: v1alpha2.SystemNamespace},
		Immutable:  ptr.To(true),
		Data:       map[string]string{"objects.yaml": b.String()},
	}
}

func bundleDeployment(i, namespaces int) *v1alpha2.BundleDeployment {
	return &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%d", i)},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     fmt.Sprintf("bench-%d", i%namespaces),
			Sources: []v1alpha2.BundleSource{{
				Type: v1alpha2.SourceTypeConfigMaps,
				ConfigMaps: []v1alpha2.ConfigMapSource{{
					ConfigMap: v1alpha2.LocalObjectReference{Name: fmt.Sprintf("bench-%d", i)}, Path: "manifests",
				}},
			}},
		},
	}
}

// floorRun server-side applies, as a plain client, the objects the
// install writes (named after which, so that each run creates them) and
// returns how long that took and the CPU seconds each process used.
func floorRun(ctx context.Context, c config, k client.Client, procs *cpuSet, which string) (time.Duration, string, cpuSample, error) {
	cpu0 := procs.sample()
	start := time.Now()
	if err := parallel(c.bundles*c.objects, c.concurrency, func(i int) error {
		return k.Patch(ctx, floorObject(which, i, c.objects, c.namespaces), client.Apply, client.FieldOwner("floor"), client.ForceOwnership)
	}); err != nil {
		return 0, "", nil, fmt.Errorf("floor apply: %w", err)
	}
	wall, used := time.Since(start), procs.used(cpu0)
	return wall, procs.format(used), used, nil
}

func floorObject(which string, i, objects, namespaces int) *corev1.ConfigMap {
	b, j := i/objects, i%objects
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-b%d-o%d", which, b, j), Namespace: fmt.Sprintf("floor-%d", b%namespaces)},
		Data:       map[string]string{"index": fmt.Sprint(j)},
	}
}

// waitInstalled watches BundleDeployments until want of them are
// Installed. A watch, not repeated lists, so that waiting costs the API
// server (which shares the machine) next to nothing.
func waitInstalled(ctx context.Context, k client.WithWatch, want int, timeout time.Duration) error {
	return waitFor(ctx, k, want, timeout, "Installed", func(bd *v1alpha2.BundleDeployment) bool {
		return meta.IsStatusConditionTrue(bd.Status.Conditions, v1alpha2.TypeInstalled)
	})
}

// waitFor watches BundleDeployments until want of them are done (what:
// what done means, for the progress lines); those of the request floor
// (class costClass) never are.
func waitFor(ctx context.Context, k client.WithWatch, want int, timeout time.Duration, what string, done func(*v1alpha2.BundleDeployment) bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	finished := map[string]bool{}
	rv := ""
	lastReport := time.Now()
	for {
		w, err := k.Watch(ctx, &v1alpha2.BundleDeploymentList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
		if err != nil {
			return fmt.Errorf("watching BundleDeployments: %w", err)
		}
		for ev := range w.ResultChan() {
			bd, ok := ev.Object.(*v1alpha2.BundleDeployment)
			if !ok {
				continue
			}
			rv = bd.ResourceVersion
			// The request floor's are not installed by anyone, whatever
			// their status says.
			finished[bd.Name] = bd.Spec.ProvisionerClassName != costClass && done(bd)
			n := 0
			for _, ok := range finished {
				if ok {
					n++
				}
			}
			if n >= want {
				w.Stop()
				fmt.Printf("  %d/%d %s\n", n, want, what)
				return nil
			}
			if time.Since(lastReport) > 5*time.Second {
				fmt.Printf("  %d/%d %s\n", n, want, what)
				lastReport = time.Now()
			}
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("not all %d BundleDeployments %s after %s: %w", want, what, timeout, err)
		}
	}
}

// parallel runs fn for 0..n-1 on workers goroutines and returns the first error.
func parallel(n, workers int, fn func(i int) error) error {
	var next atomic.Int64
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// rssParts returns the process's resident anonymous memory (heap, stacks)
// and file pages (mostly its binary) now, in KiB.
func rssParts(pid int) (anon, file int64, err error) {
	if anon, err = procStatus(pid, "RssAnon"); err != nil {
		return 0, 0, err
	}
	if file, err = procStatus(pid, "RssFile"); err != nil {
		return 0, 0, err
	}
	return anon, file, nil
}

// peakRSS returns the process's peak resident set size in KiB (VmHWM).
func peakRSS(pid int) (int64, error) { return procStatus(pid, "VmHWM") }

// installers makes, for install-sa, a ServiceAccount bench-<i> for every
// BundleDeployment in its install namespace, and in each namespace a Role
// allowing what the bundles hold (ConfigMaps) bound to its accounts.
func installers(ctx context.Context, k client.Client, c config) error {
	if err := parallel(c.bundles, c.concurrency, func(i int) error {
		return k.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%d", i), Namespace: fmt.Sprintf("bench-%d", i%c.namespaces)}})
	}); err != nil {
		return fmt.Errorf("creating ServiceAccounts: %w", err)
	}
	for n := 0; n < c.namespaces; n++ {
		ns := fmt.Sprintf("bench-%d", n)
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "bench-installer", Namespace: ns},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}}
		if err := k.Create(ctx, role); err != nil {
			return fmt.Errorf("creating Role: %w", err)
		}
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bench-installers", Namespace: ns},
			RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name}}
		for i := n; i < c.bundles; i += c.namespaces {
			rb.Subjects = append(rb.Subjects, rbacv1.Subject{Kind: "ServiceAccount", Name: fmt.Sprintf("bench-%d", i), Namespace: ns})
		}
		if err := k.Create(ctx, rb); err != nil {
			return fmt.Errorf("creating RoleBinding: %w", err)
		}
	}
	return nil
}
