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
	"github.com/rukpak/rukpak/internal/testutil/envtest"
)

// examplesHealthyFor is how long the examples must stay healthy: long
// enough that a simulated node without a heartbeat would have gone
// NotReady (about a minute) and its Pods lost Ready.
const examplesHealthyFor = 5 * time.Minute

// TestExamplesStayHealthy applies examples/ as `make run` does and checks,
// every few seconds for five minutes after they became Ready, that every
// example is still Ready and every Deployment it made Available. It runs
// in parallel with the rest of the suite, so it adds little wall time.
func TestExamplesStayHealthy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kubectl(t, "apply", "-f", filepath.Join(envtest.RepoRoot(), "examples"))
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
		for name, ns := range examples {
			if err := deploymentsAvailable(ctx, ns); err != nil {
				return fmt.Errorf("example bd/%s: %w", name, err)
			}
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
	ready := time.Now()
	for time.Since(ready) < examplesHealthyFor {
		if err := check(); err != nil {
			t.Fatalf("%s after the examples were Ready: %v", time.Since(ready).Round(time.Second), err)
		}
		time.Sleep(5 * time.Second)
	}
}

// deploymentsAvailable checks every Deployment in ns is available.
func deploymentsAvailable(ctx context.Context, ns string) error {
	deps := &appsv1.DeploymentList{}
	if err := suite.client.List(ctx, deps, client.InNamespace(ns)); err != nil {
		return err
	}
	for _, d := range deps.Items {
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		if d.Status.ObservedGeneration != d.Generation || d.Status.AvailableReplicas < want {
			return fmt.Errorf("deployment %s/%s: %d/%d available", ns, d.Name, d.Status.AvailableReplicas, want)
		}
	}
	return nil
}
