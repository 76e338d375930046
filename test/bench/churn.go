package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/localcluster"
)

// runChurn measures identity churn: N BundleDeployments, each installed as
// a different ServiceAccount, are created and deleted again, and the
// manager's memory afterwards should be back near where it started.
//
// It creates N namespaces churn-I, each with a ServiceAccount bound to one
// ClusterRole granting what the apply engine does to ConfigMaps, and one
// shared bundle of one small ConfigMap. A warm-up BundleDeployment is
// installed and deleted, so that what the manager starts lazily is in the
// baseline. Then each round creates the N BundleDeployments, waits until
// all are Installed, deletes them and waits until they are gone. The
// manager is measured -churn-settle after the warm-up (before), with all
// Installed (peak) and -churn-settle after each round (after), each time
// after forced garbage collections. The minimal cluster has no namespace
// controller, so the namespaces stay.
func runChurn(ctx context.Context, c config, cl *localcluster.Cluster, k client.WithWatch, cs kubernetes.Interface) error {
	pid, err := cl.PID("rukpak")
	if err != nil {
		return err
	}
	if err := prepareChurn(ctx, c, k, cs); err != nil {
		return err
	}
	fmt.Println("warming up: one BundleDeployment as a ServiceAccount, installed and deleted")
	if _, err := churnRound(ctx, k, []string{churnName(-1)}, c.concurrency); err != nil {
		return err
	}
	fmt.Printf("  waiting %s before measuring\n", c.churnSettle)
	time.Sleep(c.churnSettle)
	before, err := sampleManager(ctx, c.pprof, pid, filepath.Join(c.stateDir, "churn-before"))
	if err != nil {
		return err
	}

	names := make([]string, c.churn)
	for i := range names {
		names[i] = churnName(i)
	}
	for round := 1; round <= c.churnRounds; round++ {
		label := fmt.Sprintf("churn %d", c.churn)
		if c.churnRounds > 1 {
			label += fmt.Sprintf(" round %d/%d", round, c.churnRounds)
		}
		fmt.Printf("%s: creating %d BundleDeployments, each as its own ServiceAccount\n", label, c.churn)
		_ = resetPeakRSS(pid) // best effort: else the peak is of the whole run
		var peak managerSample
		r, err := churnRound(ctx, k, names, c.concurrency, func() error {
			var err error
			peak, err = sampleManager(ctx, c.pprof, pid, filepath.Join(c.stateDir, fmt.Sprintf("churn-peak-%d", round)))
			return err
		})
		if err != nil {
			return err
		}
		hwm, err := procStatus(pid, "VmHWM")
		if err != nil {
			return err
		}
		fmt.Printf("  all deleted; waiting %s before measuring\n", c.churnSettle)
		time.Sleep(c.churnSettle)
		after, err := sampleManager(ctx, c.pprof, pid, filepath.Join(c.stateDir, fmt.Sprintf("churn-after-%d", round)))
		if err != nil {
			return err
		}
		peak.rss = hwm
		left, err := leftoverConfigMaps(ctx, k)
		if err != nil {
			return err
		}
		fmt.Printf("\n%s: installed as %d ServiceAccounts in %s, deleted in %s; installed ConfigMaps left: %d\n",
			label, c.churn, r.installed.Round(time.Millisecond), r.deleted.Round(time.Millisecond), left)
		printChurn(label, before, peak, after)
	}
	fmt.Printf("(heap in use: HeapInuse, live heap: HeapAlloc, each after forced GCs, with all Installed for the peak;\n"+
		" RSS: VmRSS, and VmHWM of the round for the peak; profiles: %s)\n",
		filepath.Join(c.stateDir, "churn-{before,peak-R,after-R}.{heap,goroutines}"))
	return nil
}

func printChurn(label string, before, peak, after managerSample) {
	const mib = 1 << 20
	fmt.Printf("%s: heap in use before %.1f MiB, peak %.1f MiB, after %.1f MiB (after/before %.2f)\n",
		label, float64(before.heapInuse)/mib, float64(peak.heapInuse)/mib, float64(after.heapInuse)/mib,
		float64(after.heapInuse)/float64(before.heapInuse))
	fmt.Printf("%s: live heap before %.1f MiB, peak %.1f MiB, after %.1f MiB (after/before %.2f)\n",
		label, float64(before.heapAlloc)/mib, float64(peak.heapAlloc)/mib, float64(after.heapAlloc)/mib,
		float64(after.heapAlloc)/float64(before.heapAlloc))
	fmt.Printf("%s: RSS before %.1f MiB, peak %.1f MiB, after %.1f MiB (after/before %.2f)\n",
		label, float64(before.rss)/1024, float64(peak.rss)/1024, float64(after.rss)/1024,
		float64(after.rss)/float64(before.rss))
	fmt.Printf("%s: goroutines before %d, peak %d, after %d (stacks %.1f, %.1f, %.1f MiB)\n", label,
		before.goroutines, peak.goroutines, after.goroutines,
		float64(before.stackInuse)/mib, float64(peak.stackInuse)/mib, float64(after.stackInuse)/mib)
}

// prepareChurn creates the ClusterRole, the bundle and, for the warm-up and
// each of the N BundleDeployments, a namespace with a bound ServiceAccount,
// and waits until the bindings are in effect.
func prepareChurn(ctx context.Context, c config, k client.Client, cs kubernetes.Interface) error {
	fmt.Printf("preparing %d namespaces, each with ServiceAccount %s bound to ClusterRole %s\n", c.churn, churnSA, churnRole)
	if err := k.Create(ctx, churnClusterRole()); err != nil {
		return fmt.Errorf("creating ClusterRole: %w", err)
	}
	if err := k.Create(ctx, churnBundleConfigMap()); err != nil {
		return fmt.Errorf("creating bundle ConfigMap: %w", err)
	}
	namespaces := make([]string, c.churn+1)
	for i := range namespaces {
		namespaces[i] = churnName(i - 1)
	}
	if err := parallel(len(namespaces), c.concurrency, func(i int) error {
		for _, obj := range churnIdentity(namespaces[i]) {
			if err := k.Create(ctx, obj); err != nil {
				return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	return waitRBAC(ctx, cs, namespaces, c.concurrency)
}

// churnTimes is how long one round took.
type churnTimes struct {
	installed, deleted time.Duration
}

// churnRound creates the BundleDeployments names (each installing into the
// namespace of its name as its ServiceAccount), waits until all are
// Installed, calls atPeak, deletes them and waits until they are gone.
func churnRound(ctx context.Context, k client.WithWatch, names []string, workers int, atPeak ...func() error) (churnTimes, error) {
	var t churnTimes
	start := time.Now()
	if err := parallel(len(names), workers, func(i int) error {
		return k.Create(ctx, churnBundleDeployment(names[i]))
	}); err != nil {
		return t, fmt.Errorf("creating BundleDeployments: %w", err)
	}
	if err := waitInstalled(ctx, k, len(names), 30*time.Minute); err != nil {
		return t, err
	}
	t.installed = time.Since(start)
	for _, f := range atPeak {
		if err := f(); err != nil {
			return t, err
		}
	}
	start = time.Now()
	if err := parallel(len(names), workers, func(i int) error {
		bd := &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: names[i]}}
		return client.IgnoreNotFound(k.Delete(ctx, bd))
	}); err != nil {
		return t, fmt.Errorf("deleting BundleDeployments: %w", err)
	}
	if err := waitGone(ctx, k, 30*time.Minute); err != nil {
		return t, err
	}
	t.deleted = time.Since(start)
	return t, nil
}
