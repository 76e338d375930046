//go:build integration

package apply_test

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/inventory"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// aggregationController is the field manager of kube-controller-manager's
// clusterrole-aggregation controller.
const aggregationController = "clusterrole-aggregation-controller"

// aggregating is an aggregating ClusterRole of a bundle.
func aggregating(name string) string {
	return "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: " + name +
		"\naggregationRule:\n  clusterRoleSelectors:\n  - matchLabels:\n      example.com/aggregate-to-" + name + ": \"true\"\n"
}

// writeBack does what the clusterrole-aggregation controller does when it
// syncs, from a stale copy, a ClusterRole that was just deleted: a
// server-side apply of its rules, which creates it again.
func writeBack(ctx context.Context, kube kubernetes.Interface, name string) error {
	cr := rbacv1ac.ClusterRole(name).WithRules(rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("configmaps").WithVerbs("get"))
	_, err := kube.RbacV1().ClusterRoles().Apply(ctx, cr, metav1.ApplyOptions{FieldManager: aggregationController, Force: true})
	return err
}

// afterDelete runs do once, as soon as ClusterRole name is deleted.
func afterDelete(t *testing.T, kube kubernetes.Interface, name string, do func(ctx context.Context) error) <-chan error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := kube.RbacV1().ClusterRoles().Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if ev.Type == watch.Deleted {
				done <- do(ctx)
				return
			}
		}
		done <- ctx.Err()
	}()
	return done
}

// TestPruneDeletesWriteBacks: a ClusterRole written back right after a
// prune deleted it (the aggregation controller's apply from a stale copy)
// does not survive the prune; one created under its name as someone
// else's (another BundleDeployment's labels) is left alone.
func TestPruneDeletesWriteBacks(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	kube := kubernetes.NewForConfigOrDie(env.Config)
	tests := []struct {
		name     string
		recreate func(ctx context.Context, name string) error
		wantGone bool
	}{
		{name: "written back by the aggregation controller", wantGone: true,
			recreate: func(ctx context.Context, name string) error { return writeBack(ctx, kube, name) }},
		{name: "created again by another BundleDeployment", recreate: func(ctx context.Context, name string) error {
			return env.Client.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: owned("someone-else", "uid-else")}})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := envtest.UniqueName("agg")
			p, err := e.Prepare(objs(t, aggregating(name)), "", apply.Owner{Name: "owner-a", Revision: "owner-a-1", UID: "uid-a"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Apply(ctx, p, apply.ApplyOptions{}); err != nil {
				t.Fatal(err)
			}
			done := afterDelete(t, kube, name, func(ctx context.Context) error { return tt.recreate(ctx, name) })
			if _, err := e.Prune(ctx, "owner-a", p.IDs(), apply.PruneOptions{OwnerUID: "uid-a"}); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatalf("re-creating %s: %v", name, err)
			}
			got := &rbacv1.ClusterRole{}
			err = env.Client.Get(ctx, client.ObjectKey{Name: name}, got)
			if tt.wantGone {
				if !apierrors.IsNotFound(err) {
					t.Fatalf("ClusterRole %s after the prune: %v (labels %v, managed by %v); want it gone", name, err, got.Labels, got.ManagedFields)
				}
				return
			}
			if err != nil || got.Labels[testKeys.OwnerName] != "someone-else" {
				t.Fatalf("ClusterRole %s after the prune: %v, labels %v; want the other owner's left alone", name, err, got.Labels)
			}
		})
	}
}

// TestWrittenBackClusterRoleIsTakenOver: an install finds, where its
// aggregating ClusterRole goes, only what the aggregation controller
// wrote back (rules, by that controller, nothing else): nobody's, taken
// over under Prevent. Anything more than that is a collision as before.
func TestWrittenBackClusterRoleIsTakenOver(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	kube := kubernetes.NewForConfigOrDie(env.Config)
	tests := []struct {
		name       string
		plain      bool // the bundle's ClusterRole does not aggregate
		more       func(ctx context.Context, name string) error
		wantRefuse string
	}{
		{name: "written back, aggregating ClusterRole: taken over"},
		{name: "written back, ClusterRole without aggregationRule", plain: true, wantRefuse: "field managers: " + aggregationController},
		{name: "labelled since", wantRefuse: "exists and is not managed by this BundleDeployment",
			more: func(ctx context.Context, name string) error {
				return env.Client.Patch(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}},
					client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"team":"x"}}}`)), client.FieldOwner(aggregationController))
			}},
		{name: "another field written by its field manager", wantRefuse: "exists and is not managed by this BundleDeployment",
			more: func(ctx context.Context, name string) error {
				cr := rbacv1ac.ClusterRole(name).WithAggregationRule(rbacv1ac.AggregationRule().WithClusterRoleSelectors(
					metav1ac.LabelSelector().WithMatchLabels(map[string]string{"rbac.authorization.k8s.io/aggregate-to-admin": "true"})))
				_, err := kube.RbacV1().ClusterRoles().Apply(ctx, cr, metav1.ApplyOptions{FieldManager: aggregationController, Force: true})
				return err
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := envtest.UniqueName("husk")
			if err := writeBack(ctx, kube, name); err != nil {
				t.Fatal(err)
			}
			if tt.more != nil {
				if err := tt.more(ctx, name); err != nil {
					t.Fatal(err)
				}
			}
			doc := aggregating(name)
			if tt.plain {
				doc = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: " + name + "\n"
			}
			p, err := e.Prepare(objs(t, doc), "", apply.Owner{Name: "me", Revision: "me-1", UID: "uid-me"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Apply(ctx, p, apply.ApplyOptions{Collisions: &apply.Collisions{Owned: map[inventory.ID]bool{}}})
			if tt.wantRefuse == "" {
				if err != nil {
					t.Fatalf("Apply: %v; want the written-back ClusterRole taken over", err)
				}
				got := &rbacv1.ClusterRole{}
				if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, got); err != nil {
					t.Fatal(err)
				}
				if got.Labels[testKeys.OwnerUID] != "uid-me" || got.AggregationRule == nil {
					t.Fatalf("ClusterRole after the apply: labels %v, aggregationRule %v; want it taken over", got.Labels, got.AggregationRule)
				}
				return
			}
			if apply.CodeOf(err) != apply.CodeCollision || !strings.Contains(err.Error(), tt.wantRefuse) {
				t.Fatalf("Apply: %v; want a Collision containing %q", err, tt.wantRefuse)
			}
		})
	}
}

// TestPruneKeeps: objects to keep (opts.Keep) are left in place and
// reported Kept with their UID while they are the owner's; one someone
// else took meanwhile is Skipped, and one that is gone is not kept.
func TestPruneKeeps(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	ns := env.Namespace(t, "keep")
	owner := apply.Owner{Name: "owner-k", Revision: "owner-k-1", UID: "uid-k"}
	p, err := e.Prepare(objs(t, cm("kept", ns, "1"), cm("taken", ns, "1"), cm("deleted", ns, "1")), ns, owner)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Apply(ctx, p, apply.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	taken, err := e.Prepare(objs(t, cm("taken", ns, "2")), ns, apply.Owner{Name: "other", Revision: "other-1", UID: "uid-other"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Apply(ctx, taken, apply.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	keep := func(id inventory.ID) bool { return id.Name != "deleted" }
	cs, err := e.Prune(ctx, owner.Name, append(p.IDs(), inventory.ID{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "never"}),
		apply.PruneOptions{Keep: keep, OwnerUID: owner.UID})
	if err != nil {
		t.Fatal(err)
	}
	got := actions(cs)
	want := map[string]apply.Action{"ConfigMap/kept": apply.Kept, "ConfigMap/taken": apply.Skipped, "ConfigMap/deleted": apply.Deleted, "ConfigMap/never": apply.Skipped}
	for k, a := range want {
		if got[k] != a {
			t.Errorf("%s: %q, want %q", k, got[k], a)
		}
	}
	for _, c := range cs.Entries {
		if (c.Action == apply.Kept) != (c.UID != "") {
			t.Errorf("%s %s with UID %q", c.Action, c.ID, c.UID)
		}
	}
	if !exists(t, "v1", "ConfigMap", ns, "kept") || exists(t, "v1", "ConfigMap", ns, "deleted") {
		t.Fatal("kept was deleted, or deleted was kept")
	}
}
