//go:build integration

package bundledeployment_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

func ttlJob(image string) string {
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
spec:
  ttlSecondsAfterFinished: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: migrate, image: %q}
`, image)
}

// TestFinishedJobIsNotRecreated: a Job with ttlSecondsAfterFinished runs
// once per revision. Deleted as the TTL controller deletes a finished one,
// it is not created again for the same revision, while a ConfigMap deleted
// at the same moment is (drift correction ran); a new revision creates it
// once more, annotated with that revision.
func TestFinishedJobIsNotRecreated(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "runonce")
	bd := newBD(t, ns, manifests(t, map[string]string{"job.yaml": ttlJob("migrate:1"), "cm.yaml": cmYAML("settings", "1")}))
	waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	job := &batchv1.Job{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "migrate"}, job); err != nil {
		t.Fatal(err)
	}
	rev1 := job.Annotations[v1alpha2.AnnotationRevision]
	if rev1 == "" {
		t.Fatalf("the Job does not say which revision created it: %v", job.Annotations)
	}

	// The TTL controller removes the finished Job; someone deletes the
	// ConfigMap.
	background := metav1.DeletePropagationBackground
	if err := env.Client.Delete(ctx, job, &client.DeleteOptions{PropagationPolicy: &background}); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}}
	if err := env.Client.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 10*time.Second, func() error {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
	})
	// Drift correction has run (the ConfigMap is back); give a second
	// event for the Job the same time, then it must still be gone.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "migrate"}, &batchv1.Job{})
		if !apierrors.IsNotFound(err) {
			t.Fatalf("the finished Job was created again for the same revision (err %v)", err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// A new revision runs it once more.
	src := manifests(t, map[string]string{"job.yaml": ttlJob("migrate:2"), "cm.yaml": cmYAML("settings", "1")})
	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) { b.Spec.Sources = source(src) })
	envtest.Eventually(t, 30*time.Second, func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "migrate"}, job); err != nil {
			return err
		}
		if rev := job.Annotations[v1alpha2.AnnotationRevision]; rev == rev1 || rev == "" {
			return fmt.Errorf("Job of revision %q", rev)
		}
		return nil
	})
}
