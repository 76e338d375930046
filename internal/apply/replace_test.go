//go:build integration

package apply_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/internal/apply"
)

func jobWith(annotations, image string) string {
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  annotations: {%s}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: migrate, image: %q}
`, annotations, image)
}

// TestImmutableFieldChanges: a revision that changes a Job's pod template
// replaces the Job when it may (the replace-on-immutable annotation, a
// Helm hook with the before-hook-creation policy, Helm's default) and is
// otherwise refused before any write, naming the object and the field.
func TestImmutableFieldChanges(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	tests := []struct {
		name        string
		annotations string
		replaced    bool
	}{
		{name: "annotated replace-on-immutable", annotations: testKeys.ReplaceOnImmutable + `: "true"`, replaced: true},
		{name: "Helm hook, default delete policy", annotations: `helm.sh/hook: pre-upgrade`, replaced: true},
		{name: "Helm hook, before-hook-creation among others", annotations: `helm.sh/hook: pre-upgrade, helm.sh/hook-delete-policy: "hook-failed,before-hook-creation"`, replaced: true},
		{name: "Helm hook deleted only on failure", annotations: `helm.sh/hook: pre-upgrade, helm.sh/hook-delete-policy: hook-failed`},
		{name: "plain Job", annotations: ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := env.Namespace(t, "immutable")
			startJobs(t, ns) // the hooks among them are waited for
			applyImage := func(image string) error {
				p, err := e.Prepare(objs(t, jobWith(tt.annotations, image), cm("other", "", image)), ns, apply.Owner{Name: "bd", Revision: "r-" + image, UID: "uid-1"})
				if err != nil {
					t.Fatal(err)
				}
				_, err = e.Apply(ctx, p, apply.ApplyOptions{Hooks: apply.HooksUpgrade})
				return err
			}
			if err := applyImage("one"); err != nil {
				t.Fatal(err)
			}
			before := migrateJob(t, ns)
			err := applyImage("two")
			after := migrateJob(t, ns)
			if tt.replaced {
				if err != nil {
					t.Fatal(err)
				}
				if after.UID == before.UID || after.Spec.Template.Spec.Containers[0].Image != "two" {
					t.Fatalf("Job not replaced: uid %s -> %s, image %s", before.UID, after.UID, after.Spec.Template.Spec.Containers[0].Image)
				}
				return
			}
			f := apply.As(err)
			if f == nil || f.Code != apply.CodeImmutable || !strings.Contains(f.Message, "Job.batch "+ns+"/migrate") ||
				!strings.Contains(f.Message, "spec.template") || !strings.Contains(f.Message, testKeys.ReplaceOnImmutable) {
				t.Fatalf("err = %v, want ImmutableFieldChanged naming the Job, spec.template and the annotation", err)
			}
			if after.UID != before.UID {
				t.Fatal("a Job that may not be replaced was replaced")
			}
			if data := configMapValue(t, ns, "other"); data != "one" {
				t.Fatalf("the refused revision wrote another object (other = %q)", data)
			}
		})
	}
}

func configMapValue(t *testing.T, ns, name string) string {
	t.Helper()
	c := &corev1.ConfigMap{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
		t.Fatal(err)
	}
	return c.Data["value"]
}

// TestFirstInstallOverExistingImmutable: a first install (a direct plan,
// which creates its objects) that finds its Job already there with another
// pod template replaces it when the Job may be replaced, and otherwise
// fails as ImmutableFieldChanged naming it, as an apply after a read did.
func TestFirstInstallOverExistingImmutable(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	for _, tt := range []struct {
		name        string
		annotations string
		replaced    bool
	}{
		{name: "annotated replace-on-immutable", annotations: testKeys.ReplaceOnImmutable + `: "true"`, replaced: true},
		{name: "plain Job", annotations: ``},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ns := env.Namespace(t, "immutable-direct")
			owner := apply.Owner{Name: "bd", Revision: "bd-1", UID: "uid-1"}
			first := func(image string) error {
				p, err := e.Prepare(objs(t, jobWith(tt.annotations, image)), ns, owner)
				if err != nil {
					t.Fatal(err)
				}
				_, err = e.Apply(ctx, p, apply.ApplyOptions{Direct: true})
				return err
			}
			if err := first("one"); err != nil {
				t.Fatal(err)
			}
			before := migrateJob(t, ns)
			err := first("two") // the Job exists: its create is refused
			after := migrateJob(t, ns)
			if tt.replaced {
				if err != nil || after.UID == before.UID || after.Spec.Template.Spec.Containers[0].Image != "two" {
					t.Fatalf("err = %v, uid %s -> %s, image %s; want the Job replaced", err, before.UID, after.UID, after.Spec.Template.Spec.Containers[0].Image)
				}
				return
			}
			if f := apply.As(err); f == nil || f.Code != apply.CodeImmutable || !strings.Contains(f.Message, "Job.batch "+ns+"/migrate") {
				t.Fatalf("err = %v, want ImmutableFieldChanged naming the Job", err)
			}
			if after.UID != before.UID {
				t.Fatal("a Job that may not be replaced was replaced")
			}
		})
	}
}

// migrateJob reads the Job jobWith makes, in ns.
func migrateJob(t *testing.T, ns string) *batchv1.Job {
	t.Helper()
	j := &batchv1.Job{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "migrate"}, j); err != nil {
		t.Fatal(err)
	}
	return j
}
