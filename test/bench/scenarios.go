package main

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/internal/localcluster"
)

// figure prints one grep-able line of a scenario: its name, the figure,
// and whether it meets its goal.
func figure(scenario, name, value, goal string, met bool) {
	verdict := "NOT MET"
	if met {
		verdict = "MET"
	}
	fmt.Printf("bench %s %s=%s goal %s %s\n", scenario, name, value, goal, verdict)
}

// writes sums the write requests (anything but get, list and watch) of
// d for the resources rukpak manages or keeps its books in.
func writes(after, before requestCounts) (int, string) {
	n := 0.0
	var parts []string
	for k, v := range after {
		diff := v - before[k]
		verb, resource, _ := strings.Cut(k, " ")
		if diff <= 0 || verb == "GET" || verb == "LIST" || verb == "WATCH" {
			continue
		}
		r := strings.TrimSuffix(resource, " (dry-run)")
		if !strings.HasPrefix(r, "configmaps") && !strings.HasPrefix(r, "bundles") && !strings.HasPrefix(r, "bundledeployments") {
			continue
		}
		n += diff
		parts = append(parts, fmt.Sprintf("%s %.0f", k, diff))
	}
	sort.Strings(parts)
	return int(n), strings.Join(parts, "; ")
}

// reconcileCount reads controller-runtime's reconcile total of the
// BundleDeployment controller and its work queue depth from the
// manager's metrics endpoint.
func reconcileCount(ctx context.Context, metricsAddr string) (total, depth float64, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+metricsAddr+"/metrics", nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		value := func() float64 {
			v, _ := strconv.ParseFloat(strings.TrimSpace(line[strings.LastIndexByte(line, ' ')+1:]), 64)
			return v
		}
		switch {
		case strings.HasPrefix(line, "controller_runtime_reconcile_total{") && strings.Contains(line, `controller="bundledeployment"`):
			total += value()
		case strings.HasPrefix(line, "workqueue_depth{") && strings.Contains(line, `name="bundledeployment"`):
			depth += value()
		}
	}
	return total, depth, nil
}

// restartScenario kills the manager (SIGKILL), starts it again as the
// local cluster does, and measures how long the new one takes to go
// through every BundleDeployment once and how many writes it makes.
func restartScenario(ctx context.Context, c config, cl *localcluster.Cluster, cs kubernetes.Interface, managerArgs []string) error {
	pid, err := cl.PID("rukpak")
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("killing the manager: %w", err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err := syscall.Kill(pid, 0); err != nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the manager (pid %d) did not exit", pid)
		}
	}
	before, err := readRequestCounts(ctx, cs)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := cl.StartManager(ctx, c.managerPath, managerArgs...); err != nil {
		return fmt.Errorf("starting the manager again: %w", err)
	}
	// Every BundleDeployment has been reconciled once the reconcile count
	// reaches their number and the queue is empty.
	var took time.Duration
	for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		total, depth, err := reconcileCount(ctx, c.metricsAddr)
		if err == nil && total >= float64(c.bundles) && depth == 0 {
			took = time.Since(start)
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the restarted manager did not reconcile every BundleDeployment in 10 minutes (reconciles %v, queue %v, err %w)", total, depth, err)
		}
	}
	after, err := readRequestCounts(ctx, cs)
	if err != nil {
		return err
	}
	n, detail := writes(after, before)
	// Issue 41: every BundleDeployment verified again within 60 s.
	figure("restart", "converged", took.Round(time.Millisecond).String(), "<=60s", took <= restartGoal)
	figure("restart", "writes", strconv.Itoa(n), "==0", n == 0)
	if detail != "" {
		fmt.Printf("  writes after the restart: %s\n", detail)
	}
	return nil
}

// idleScenario leaves the installed BundleDeployments alone for d and
// counts the requests made meanwhile.
func idleScenario(ctx context.Context, cs kubernetes.Interface, d time.Duration) error {
	before, err := readRequestCounts(ctx, cs)
	if err != nil {
		return err
	}
	time.Sleep(d)
	after, err := readRequestCounts(ctx, cs)
	if err != nil {
		return err
	}
	n, detail := writes(after, before)
	total := 0.0
	for k, v := range after {
		total += v - before[k]
	}
	figure("idle", "writes", strconv.Itoa(n), "==0", n == 0)
	fmt.Printf("bench idle requests-per-minute=%.0f (%s)\n", total/d.Minutes(), after.top(before, 6))
	if detail != "" {
		fmt.Printf("  writes while idle: %s\n", detail)
	}
	return nil
}

// driftScenario edits or deletes edits managed ConfigMaps at random, one
// every interval, and measures the time until each is restored.
func driftScenario(ctx context.Context, c config, k client.Client, cs kubernetes.Interface, edits int, interval time.Duration) error {
	rng := rand.New(rand.NewSource(1))
	took, err := driftEdits(ctx, c, k, cs, interval, func() int { return rng.Intn(c.bundles) }, func(i int) bool { return i < edits })
	if err != nil {
		return err
	}
	reportDrift("drift", took)
	return nil
}

// driftEdits edits or deletes a managed ConfigMap of the bundle pick
// returns, one every interval while more(i) for the i-th edit, and
// returns the times until each was restored, sorted, as a watch of them
// (watchRestores) sees it. When some are not restored within a minute,
// the error says how many, and how soon the others were.
func driftEdits(ctx context.Context, c config, k client.Client, cs kubernetes.Interface, interval time.Duration, pick func() int, more func(i int) bool) ([]time.Duration, error) {
	// The watch ends with the scenario.
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	watch, err := watchRestores(wctx, cs)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewSource(2))
	var mu sync.Mutex
	var took []time.Duration
	var failures []string
	var wg sync.WaitGroup
	// Objects edited and not restored yet are not picked again.
	pending := map[client.ObjectKey]bool{}
	for i := 0; more(i); i++ {
		b, o := pick(), rng.Intn(c.objects)
		key := client.ObjectKey{Namespace: fmt.Sprintf("bench-%d", b%c.namespaces), Name: fmt.Sprintf("b%d-o%d", b, o)}
		mu.Lock()
		busy := pending[key]
		pending[key] = true
		mu.Unlock()
		if busy {
			continue
		}
		cm := &corev1.ConfigMap{}
		if err := k.Get(ctx, key, cm); err != nil {
			return nil, fmt.Errorf("reading %s: %w", key, err)
		}
		restored, when, start, err := edit(ctx, k, watch, cm, rng.Intn(2) == 0)
		if err != nil {
			return nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-restored:
				mu.Lock()
				took = append(took, when().Sub(start))
				delete(pending, key)
				mu.Unlock()
			case <-time.After(time.Minute):
				watch.forget(key)
				mu.Lock()
				failures = append(failures, key.String())
				mu.Unlock()
			case <-ctx.Done():
			}
		}()
		time.Sleep(interval)
	}
	wg.Wait()
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	if len(failures) > 0 {
		return nil, fmt.Errorf("%d objects not restored within a minute, e.g. %s; the other %d were, p50 %s, p99 %s",
			len(failures), failures[0], len(took), percentile(took, 50).Round(time.Millisecond), percentile(took, 99).Round(time.Millisecond))
	}
	return took, nil
}

// edit deletes cm (del) or changes its data key index, waiting (watch)
// for it to be restored as it was; it returns when the edit was made.
// The wait starts before the edit, from the version read, so that a
// restore that comes at once is not missed: any later version that has
// the index as it was is the restore.
func edit(ctx context.Context, k client.Client, watch *restores, cm *corev1.ConfigMap, del bool) (<-chan struct{}, func() time.Time, time.Time, error) {
	key := client.ObjectKeyFromObject(cm)
	want := cm.Data["index"]
	restored, when, err := watch.expect(key, want, cm.ResourceVersion)
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	start := time.Now()
	if del {
		err = k.Delete(ctx, cm)
		if apierrors.IsNotFound(err) {
			err = nil
		}
	} else {
		cm.Data["index"] = "tampered"
		if err = k.Update(ctx, cm); apierrors.IsConflict(err) {
			err = nil
		}
	}
	if err != nil {
		watch.forget(key)
		return nil, nil, start, fmt.Errorf("editing %s: %w", key, err)
	}
	return restored, when, start, nil
}

// reportDrift prints a drift scenario's percentiles and the p99 goal.
func reportDrift(scenario string, took []time.Duration) {
	p50, p99 := percentile(took, 50), percentile(took, 99)
	figure(scenario, "edits", strconv.Itoa(len(took)), "(report)", true)
	figure(scenario, "p50", p50.Round(time.Millisecond).String(), "(report)", true)
	figure(scenario, "p99", p99.Round(time.Millisecond).String(), "<=2s", p99 <= 2*time.Second)
}

// restartGoal is how soon a restarted manager must have verified every
// BundleDeployment.
const restartGoal = 60 * time.Second

// percentile returns the p-th percentile of sorted durations.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}
