package main

import (
	"context"
	"fmt"
	"math/rand"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// maxUpgrading is how many BundleDeployments drift-upgrade upgrades at
// once (issue 41: drift while 1,000 of them are being upgraded).
const maxUpgrading = 1000

// upgradingCount is how many of bundles drift-upgrade upgrades: at most
// maxUpgrading, and half of them when there are fewer than twice that,
// so that as many are left to edit.
func upgradingCount(bundles int) int {
	return min(maxUpgrading, bundles/2)
}

// driftUpgradeScenario upgrades the first upgradingCount BundleDeployments
// (each to a new source ConfigMap that changes every object), and while
// they upgrade, edits or deletes managed objects of the others, one every
// interval (at least -drift-edits of them), measuring the time until each
// is restored: drift correction must not queue behind upgrades.
func driftUpgradeScenario(ctx context.Context, c config, k client.WithWatch, cs kubernetes.Interface, interval time.Duration) error {
	n := upgradingCount(c.bundles)
	if n == 0 {
		return fmt.Errorf("drift-upgrade needs at least 2 bundles")
	}
	if err := parallel(n, c.concurrency, func(i int) error {
		return k.Create(ctx, upgradedSource(i, c.objects))
	}); err != nil {
		return fmt.Errorf("creating upgraded sources: %w", err)
	}
	var upgraded atomic.Bool
	waited := make(chan error, 1)
	start := time.Now()
	go func() {
		err := parallel(n, c.concurrency, func(i int) error {
			patch := fmt.Sprintf(`{"spec":{"sources":[{"type":"configMaps","configMaps":[{"configMap":{"name":%q},"path":"manifests"}]}]}}`, upgradedSource(i, c.objects).Name)
			bd := &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%d", i)}}
			return k.Patch(ctx, bd, client.RawPatch("application/merge-patch+json", []byte(patch)))
		})
		if err == nil {
			err = waitFor(ctx, k, n, 30*time.Minute, "upgraded", upgradedTo)
		}
		upgraded.Store(true)
		waited <- err
	}()
	rng := rand.New(rand.NewSource(3))
	took, err := driftEdits(ctx, c, k, cs, interval, func() int { return n + rng.Intn(c.bundles-n) },
		func(i int) bool { return i < c.driftEdits || !upgraded.Load() })
	if werr := <-waited; werr != nil {
		return fmt.Errorf("upgrading %d BundleDeployments: %w", n, werr)
	}
	if err != nil {
		return err
	}
	figure("drift-upgrade", "upgraded", fmt.Sprintf("%d in %s", n, time.Since(start).Round(100*time.Millisecond)), "(report)", true)
	reportDrift("drift-upgrade", took)
	return nil
}

// upgradedSource is bundle i's next revision: every object's data
// changed.
func upgradedSource(i, objects int) *corev1.ConfigMap {
	return sourceRevision(fmt.Sprintf("bench-%d-v2", i), i, objects, "2")
}

// upgradedTo tells whether bd has settled on a spec other than its
// first: Installed, and no longer Progressing, for that generation.
func upgradedTo(bd *v1alpha2.BundleDeployment) bool {
	if bd.Generation < 2 {
		return false
	}
	installed := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled)
	progressing := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeProgressing)
	return installed != nil && installed.Status == metav1.ConditionTrue && installed.ObservedGeneration == bd.Generation &&
		progressing != nil && progressing.Status == metav1.ConditionFalse && progressing.ObservedGeneration == bd.Generation
}
