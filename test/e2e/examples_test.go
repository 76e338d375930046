package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/sourcetree"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// examplesHealthyFor is how long the examples must stay healthy: long
// enough that a simulated node without a heartbeat would have gone
// NotReady and its Pods lost Ready, twice over: kwok's Lease lasts 40 s
// (internal/localcluster) and the node lifecycle controller marks the
// Node NotReady 50 s (its node-monitor-grace-period) after the last
// renewal, checking every 5 s.
const examplesHealthyFor = 2 * time.Minute

// TestExamplesStayHealthy applies examples/ as `make run` (hack/run.sh)
// does and checks, every few seconds until examplesHealthyFor after the apply,
// that once Ready every example stays Ready and every Deployment it made
// Available. It runs in parallel with the rest of the suite's parallel
// tests, so it adds little wall time.
func TestExamplesStayHealthy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	installed := time.Now()
	kubectl(t, "apply", "-f", filepath.Join(sourcetree.Root(), "examples"))
	examples := map[string]string{} // BundleDeployment → install namespace
	check := func() error {
		list := &v1alpha2.BundleDeploymentList{}
		if err := suite.client.List(ctx, list); err != nil {
			return err
		}
		for _, bd := range list.Items {
			if _, ok := examples[bd.Name]; !ok {
				continue
			}
			if c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeReady); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != bd.Generation {
				return fmt.Errorf("example bd/%s: Ready = %+v", bd.Name, c)
			}
		}
		deployments := 0
		for name, ns := range examples {
			n, err := deploymentsAvailable(ctx, ns)
			if err != nil {
				return fmt.Errorf("example bd/%s: %w", name, err)
			}
			deployments += n
		}
		// hello, webapp, memo-operator and team-app make one each.
		if deployments < 4 {
			return fmt.Errorf("%d Deployments in the examples' namespaces, want at least 4", deployments)
		}
		return nil
	}
	for _, name := range []string{"hello", "greeting", "webapp", "memo-operator", "team-app"} {
		bd := &v1alpha2.BundleDeployment{}
		if err := suite.client.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
			t.Fatalf("example %s: %v", name, err)
		}
		examples[name] = bd.Spec.InstallNamespace
	}
	envtest.Eventually(t, corpusDeadline, check)
	t.Logf("the examples were Ready %s after the apply", time.Since(installed).Round(time.Second))
	for {
		if err := check(); err != nil {
			t.Fatalf("%s after the examples were installed: %v", time.Since(installed).Round(time.Second), err)
		}
		if time.Since(installed) >= examplesHealthyFor {
			return
		}
		time.Sleep(5 * time.Second)
	}
}

// deploymentsAvailable checks every Deployment in ns is available and
// returns how many there are.
func deploymentsAvailable(ctx context.Context, ns string) (int, error) {
	deps := &appsv1.DeploymentList{}
	if err := suite.client.List(ctx, deps, client.InNamespace(ns)); err != nil {
		return 0, err
	}
	for _, d := range deps.Items {
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		if d.Status.ObservedGeneration != d.Generation || d.Status.AvailableReplicas < want {
			return 0, fmt.Errorf("deployment %s/%s: %d/%d available", ns, d.Name, d.Status.AvailableReplicas, want)
		}
	}
	return len(deps.Items), nil
}
