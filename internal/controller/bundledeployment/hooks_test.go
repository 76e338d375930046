//go:build integration

package bundledeployment_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// hookJobYAML is a Job run as a Helm hook of events, deleted once it
// succeeded.
func hookJobYAML(name, events, image string) string {
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: %s
  annotations:
    helm.sh/hook: %s
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: main, image: %q}
`, name, events, image)
}

// finishJobs plays the Job controller in ns until the test ends (envtest
// runs none), and returns a function listing the UIDs of Jobs it finished,
// by name.
func finishJobs(t *testing.T, ns string) func(name string) []types.UID {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	runs := map[string][]types.UID{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			jobs := &batchv1.JobList{}
			if err := env.Client.List(ctx, jobs, client.InNamespace(ns)); err == nil {
				for i := range jobs.Items {
					job := &jobs.Items[i]
					finished, err := envtest.FinishJob(ctx, env.Client, job, false)
					if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) && ctx.Err() == nil {
						t.Errorf("finishing Job %s: %v", job.Name, err)
					}
					if finished {
						mu.Lock()
						runs[job.Name] = append(runs[job.Name], job.UID)
						mu.Unlock()
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return func(name string) []types.UID {
		mu.Lock()
		defer mu.Unlock()
		return append([]types.UID(nil), runs[name]...)
	}
}

// TestHooksOfAPlainBundle: objects annotated as Helm hooks run at their
// phase in any format: the pre-install Job finishes before the ConfigMap
// is created, is deleted once it succeeded and is not created again (not
// drift, not unhealthy), while a deleted ConfigMap is restored; an upgrade
// runs the pre-upgrade hook once, and not the install-only one.
func TestHooksOfAPlainBundle(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "hooks")
	runs := finishJobs(t, ns)
	files := func(value string) map[string]string {
		return map[string]string{
			"install.yaml": hookJobYAML("setup", "pre-install", "setup:1"),
			"migrate.yaml": hookJobYAML("migrate", "pre-install,pre-upgrade", "migrate:1"),
			"cm.yaml":      cmYAML("settings", value),
		}
	}
	bd := newBD(t, ns, manifests(t, files("1")))
	waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	waitCondition(t, bd.Name, v1alpha2.TypeReady, metav1.ConditionTrue, v1alpha2.ReasonReady)
	if len(runs("setup")) != 1 || len(runs("migrate")) != 1 {
		t.Fatalf("hooks ran %d (setup) and %d (migrate) times for the install, want once each", len(runs("setup")), len(runs("migrate")))
	}
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "settings"}, cm); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"setup", "migrate"} {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &batchv1.Job{}); !apierrors.IsNotFound(err) {
			t.Fatalf("hook %s (hook-succeeded) is still there (err %v)", name, err)
		}
	}

	// Drift correction restores the ConfigMap, and leaves the hooks gone.
	if err := env.Client.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 10*time.Second, func() error {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
	})
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if n := len(runs("setup")) + len(runs("migrate")); n != 2 {
			t.Fatalf("a hook ran again for the same revision (%d runs)", n)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// An upgrade runs the pre-upgrade hook, not the pre-install one.
	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) { b.Spec.Sources = source(manifests(t, files("2"))) })
	envtest.Eventually(t, 30*time.Second, func() error {
		got := &corev1.ConfigMap{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), got); err != nil {
			return err
		}
		if got.Data["value"] != "2" {
			return fmt.Errorf("value = %q, want 2", got.Data["value"])
		}
		return nil
	})
	waitCondition(t, bd.Name, v1alpha2.TypeReady, metav1.ConditionTrue, v1alpha2.ReasonReady)
	if len(runs("migrate")) != 2 || len(runs("setup")) != 1 {
		t.Fatalf("after the upgrade: migrate ran %d times (want 2), setup %d (want 1)", len(runs("migrate")), len(runs("setup")))
	}
}
