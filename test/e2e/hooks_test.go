package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
	"github.com/rukpak/rukpak/test/internal/follow"
)

// hookChart writes a chart whose pre-install/pre-upgrade hook is a Job
// that removes itself as soon as it finishes (ttlSecondsAfterFinished: 0)
// and whose pod template carries the value "migration".
func hookChart(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "hooked")
	files := map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: hooked\nversion: 0.1.0\n",
		"values.yaml": "migration: v1\n",
		"templates/migrate.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-migrate
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
spec:
  ttlSecondsAfterFinished: 0
  template:
    metadata:
      labels: {migration: {{ .Values.migration | quote }}}
    spec:
      restartPolicy: Never
      nodeSelector: {type: kwok}
      tolerations:
      - {key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}
      containers:
      - {name: migrate, image: registry.k8s.io/pause:3.10}
`,
		"templates/notify.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-notify
  annotations:
    helm.sh/hook: post-install,post-upgrade
    helm.sh/hook-delete-policy: hook-succeeded
spec:
  template:
    spec:
      restartPolicy: Never
      nodeSelector: {type: kwok}
      tolerations:
      - {key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}
      containers:
      - {name: notify, image: registry.k8s.io/pause:3.10}
`,
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-config\ndata:\n  migration: {{ .Values.migration | quote }}\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// jobRun is one Job seen by jobRuns: its UID and when it completed.
type jobRun struct {
	uid       types.UID
	completed time.Time
}

// jobRuns watches the Jobs of namespace ns named name and records every
// one created, in order, until the test ends.
func jobRuns(t *testing.T, ns, name string) func() []jobRun {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", suite.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: envtest.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var runs []jobRun
	seen := map[types.UID]int{}
	record := func(j *batchv1.Job) {
		if j.Name != name {
			return
		}
		n, ok := seen[j.UID]
		if !ok {
			n = len(runs)
			seen[j.UID] = n
			runs = append(runs, jobRun{uid: j.UID})
		}
		if j.Status.CompletionTime != nil {
			runs[n].completed = j.Status.CompletionTime.Time
		}
	}
	mu.Lock() // Jobs listed before the watch are recorded first
	list := &batchv1.JobList{}
	ended := follow.Watch(t, wc, list, func(e watch.Event) {
		if j, ok := e.Object.(*batchv1.Job); ok {
			mu.Lock()
			defer mu.Unlock()
			record(j)
		}
	}, client.InNamespace(ns))
	for i := range list.Items {
		record(&list.Items[i])
	}
	mu.Unlock()
	return func() []jobRun {
		if err := ended(); err != nil {
			t.Fatalf("cannot count the runs of Job %s/%s: %v", ns, name, err)
		}
		mu.Lock()
		defer mu.Unlock()
		return append([]jobRun(nil), runs...)
	}
}

// TestHookJobRunsOncePerRevision: a chart's pre-install/pre-upgrade hook
// Job with ttlSecondsAfterFinished 0 runs once for the install and once for
// an upgrade that changes its pod template (an immutable field: the hook
// is replaced, as Helm's before-hook-creation default does), counted by
// the distinct Job UIDs a watch sees over a minute after each; it completes
// before the chart's other objects are created. A post-install/post-upgrade
// hook deleted on success (hook-succeeded) also runs once per revision: a
// hook is not drift-corrected.
func TestHookJobRunsOncePerRevision(t *testing.T) {
	t.Parallel()
	host := startRegistry(t)
	ref := host + "/charts/hooked:0.1.0"
	pushHelmChart(t, ref, hookChart(t))
	name, ns := envtest.UniqueName("hooked"), envtest.UniqueName("hooked")
	runs := jobRuns(t, ns, name+"-migrate")
	notifies := jobRuns(t, ns, name+"-notify")
	createFormatBD(t, name, v1alpha2.ClassHelm, ns, "oci://"+ref, &v1alpha2.BundleConfig{Values: &apiextensionsv1.JSON{Raw: []byte(`{"migration": "v1"}`)}})
	t.Cleanup(func() { deleteBD(t, name) })
	waitInstalled(t, name)
	envtest.Eventually(t, 60*time.Second, func() error {
		if n := len(runs()); n == 0 {
			return fmt.Errorf("the hook Job has not run")
		}
		return nil
	})
	time.Sleep(time.Minute) // the minute over which the runs are counted
	if n := len(runs()); n != 1 {
		t.Fatalf("the hook Job ran %d times in the minute after the install, want once", n)
	}
	if n := len(notifies()); n != 1 {
		t.Fatalf("the post-install hook ran %d times in the minute after the install, want once", n)
	}
	completed := runs()[0].completed
	created := configMapCreated(t, ns, name+"-config")
	if completed.IsZero() || created.Before(completed) {
		t.Fatalf("the ConfigMap was created at %s, before the pre-install hook completed (%s)", created, completed)
	}
	if jobExists(t, ns, name+"-notify") {
		t.Fatal("the post-install hook with hook-succeeded is still there")
	}

	updateSpec(t, name, func(s *v1alpha2.BundleDeploymentSpec) {
		s.Config.Values = &apiextensionsv1.JSON{Raw: []byte(`{"migration": "v2"}`)}
	})
	envtest.Eventually(t, 60*time.Second, func() error {
		if v := configMapData(t, ns, name+"-config")["migration"]; v != "v2" {
			return fmt.Errorf("migration = %q, want v2", v)
		}
		if n := len(runs()); n < 2 {
			return fmt.Errorf("the hook Job has not run for the upgrade (%d runs)", n)
		}
		return nil
	})
	waitInstalled(t, name)
	time.Sleep(time.Minute)
	if n := len(runs()); n != 2 {
		t.Fatalf("the hook Job ran %d times over the install and the upgrade, want twice", n)
	}
	if n := len(notifies()); n != 2 {
		t.Fatalf("the post-upgrade hook ran %d times over the install and the upgrade, want twice", n)
	}
}

// configMapCreated returns when the ConfigMap was created.
func configMapCreated(t *testing.T, ns, name string) time.Time {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := suite.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
		t.Fatal(err)
	}
	return cm.CreationTimestamp.Time
}

// jobExists reports whether the Job is there.
func jobExists(t *testing.T, ns, name string) bool {
	t.Helper()
	err := suite.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &batchv1.Job{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}
