//go:build integration

package bundledeployment_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// uniqueCRD returns a CRD of a plural of its own, and its name.
func uniqueCRD() (string, string) {
	plural := envtest.UniqueName("gizmos")
	kind := "G" + strings.ReplaceAll(plural[len("gizmos-"):], "-", "")
	return fmt.Sprintf(widgetCRD, plural, kind, plural[:len(plural)-1], "              size: {type: integer}\n"), plural + ".example.com"
}

// keptCM is a ConfigMap the bundle keeps (helm.sh/resource-policy: keep).
func keptCM(name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  annotations:\n    helm.sh/resource-policy: keep\ndata:\n  value: %q\n", name, value)
}

// createBD creates a plain BundleDeployment name of files into ns.
func createBD(t *testing.T, name, ns string, files map[string]string) *v1alpha2.BundleDeployment {
	t.Helper()
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha2.BundleDeploymentSpec{ProvisionerClassName: v1alpha2.ClassPlain, InstallNamespace: ns, Sources: source(manifests(t, files))},
	}
	if err := env.Client.Create(context.Background(), bd); err != nil {
		t.Fatalf("creating BundleDeployment %s: %v", name, err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), bd) })
	return bd
}

// deleteAndWait deletes BundleDeployment name and waits until it is gone.
func deleteAndWait(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.Delete(ctx, &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 30*time.Second, func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &v1alpha2.BundleDeployment{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("BundleDeployment %s still there: %v", name, err)
		}
		return nil
	})
}

// ownerOf returns obj's UID and the owner UID its labels name.
func ownerOf(t *testing.T, obj client.Object, ns, name string) (types.UID, string) {
	t.Helper()
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		t.Fatalf("%T %s: %v", obj, name, err)
	}
	return obj.GetUID(), obj.GetLabels()[v1alpha2.LabelOwnerUID]
}

// TestReinstallTakesBackWhatWasKept: a BundleDeployment deleted leaves its
// CRD (deletionPolicy.crds: Keep, the default) and its
// helm.sh/resource-policy: keep objects in place, released; the same
// BundleDeployment created again — or another one with them in its
// revision — takes them over, the same objects, without a collision.
// Once taken, they are the taker's: a third one naming them is refused.
func TestReinstallTakesBackWhatWasKept(t *testing.T) {
	for _, sameName := range []bool{true, false} {
		t.Run(fmt.Sprintf("same name %v", sameName), func(t *testing.T) {
			ns := envtest.UniqueName("reinstall")
			crd, crdName := uniqueCRD()
			files := map[string]string{"crd.yaml": crd, "kept.yaml": keptCM("kept", "v1"), "app.yaml": cmYAML("app", "v1")}
			first := createBD(t, envtest.UniqueName("bd"), ns, files)
			waitCondition(t, first.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
			crdUID, _ := ownerOf(t, &apiextensionsv1.CustomResourceDefinition{}, "", crdName)
			keptUID, _ := ownerOf(t, &corev1.ConfigMap{}, ns, "kept")

			deleteAndWait(t, first.Name)
			mustNotExist(t, &corev1.ConfigMap{}, ns, "app")
			if _, owner := ownerOf(t, &apiextensionsv1.CustomResourceDefinition{}, "", crdName); owner != string(first.UID) {
				t.Fatalf("kept CRD labelled for %q, want the deleted %s", owner, first.UID)
			}

			name := first.Name
			if !sameName {
				name = envtest.UniqueName("bd")
			}
			again := createBD(t, name, ns, files)
			waitCondition(t, again.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
			for _, o := range []struct {
				obj     client.Object
				ns, n   string
				wantUID types.UID
			}{{&apiextensionsv1.CustomResourceDefinition{}, "", crdName, crdUID}, {&corev1.ConfigMap{}, ns, "kept", keptUID}} {
				uid, owner := ownerOf(t, o.obj, o.ns, o.n)
				if uid != o.wantUID || owner != string(again.UID) {
					t.Fatalf("%s: uid %s labelled for %s; want the same object (%s) taken over by %s", o.n, uid, owner, o.wantUID, again.UID)
				}
			}
			waitValue(t, ns, "app", "v1")

			// An object of a live owner still collides.
			third := createBD(t, envtest.UniqueName("bd"), ns, map[string]string{"crd.yaml": crd})
			waitInstalledMessage(t, third.Name, v1alpha2.ReasonCollision, "CustomResourceDefinition.apiextensions.k8s.io "+crdName,
				"is managed by BundleDeployment "+again.Name)
		})
	}
}

// TestForgedReleaseGetsNothing: what a tenant can write on objects —
// labels and annotations — releases nothing. Labels naming a
// BundleDeployment that did release objects, on an object it did not
// release (another team's live one), on one created again under a
// released name, or written back after the release was taken, give the
// object to no one.
func TestForgedReleaseGetsNothing(t *testing.T) {
	ctx := context.Background()
	ns := envtest.UniqueName("forge")
	// released leaves "kept" in place when it is deleted.
	released := createBD(t, envtest.UniqueName("released"), ns, map[string]string{"kept.yaml": keptCM("kept", "released")})
	waitCondition(t, released.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	deleteAndWait(t, released.Name)
	// victim holds "victims", paused so that its drift correction does
	// not put forged labels back at once.
	victim := createBD(t, envtest.UniqueName("victim"), ns, map[string]string{"v.yaml": cmYAML("victims", "victim")})
	waitCondition(t, victim.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	updateBD(t, victim.Name, func(bd *v1alpha2.BundleDeployment) { bd.Spec.Paused = true })
	waitCondition(t, victim.Name, v1alpha2.TypePaused, metav1.ConditionTrue, "Paused")

	forge := func(t *testing.T, name string) {
		t.Helper()
		cm := &corev1.ConfigMap{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
			t.Fatal(err)
		}
		cm.Labels = ownedBy(released.Name, released.UID)
		cm.Annotations = map[string]string{"core.rukpak.io/released": "true", "helm.sh/resource-policy": "keep"}
		if err := env.Client.Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name   string
		object string
		before func(t *testing.T)
		want   string
		value  string // what the object must still hold
	}{
		{name: "another team's live object labelled as released", object: "victims", value: "victim",
			before: func(t *testing.T) { forge(t, "victims") }, want: "did not release it"},
		{name: "an object created again under a released name, labels copied", object: "kept", value: "impostor",
			before: func(t *testing.T) {
				if err := env.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: ns}}); err != nil {
					t.Fatal(err)
				}
				impostor := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: ns, Labels: ownedBy(released.Name, released.UID)},
					Data: map[string]string{"value": "impostor"}}
				if err := env.Client.Create(ctx, impostor); err != nil {
					t.Fatal(err)
				}
			}, want: "did not release it"},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.before(t)
			thief := createBD(t, envtest.UniqueName("thief"), ns, map[string]string{"x.yaml": cmYAML(st.object, "thief")})
			waitInstalledMessage(t, thief.Name, v1alpha2.ReasonCollision, "ConfigMap "+ns+"/"+st.object, st.want)
			if data, _ := configMapData(t, ns, st.object); data["value"] != st.value {
				t.Fatalf("%s = %v; want it untouched", st.object, data)
			}
		})
	}

	t.Run("labels written back after the release was taken", func(t *testing.T) {
		ns := envtest.UniqueName("replay")
		released := createBD(t, envtest.UniqueName("released"), ns, map[string]string{"kept.yaml": keptCM("kept", "released")})
		waitCondition(t, released.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
		deleteAndWait(t, released.Name)
		taker := createBD(t, envtest.UniqueName("taker"), ns, map[string]string{"kept.yaml": cmYAML("kept", "taker")})
		waitCondition(t, taker.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
		updateBD(t, taker.Name, func(bd *v1alpha2.BundleDeployment) { bd.Spec.Paused = true })
		waitCondition(t, taker.Name, v1alpha2.TypePaused, metav1.ConditionTrue, "Paused")
		cm := &corev1.ConfigMap{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kept"}, cm); err != nil {
			t.Fatal(err)
		}
		cm.Labels = ownedBy(released.Name, released.UID)
		if err := env.Client.Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
		thief := createBD(t, envtest.UniqueName("thief"), ns, map[string]string{"x.yaml": cmYAML("kept", "thief")})
		waitInstalledMessage(t, thief.Name, v1alpha2.ReasonCollision, "ConfigMap "+ns+"/kept", "is being taken over by BundleDeployment "+taker.Name)
		if data, _ := configMapData(t, ns, "kept"); data["value"] != "taker" {
			t.Fatalf("kept = %v; want the taker's", data)
		}
	})
}

// TestResourcePolicyKeep: an object the revision applied with
// helm.sh/resource-policy: keep is left in place when a revision drops
// it (released: another BundleDeployment takes it over), when an object
// without it is pruned; the annotation written on the live object by
// someone else keeps nothing.
func TestResourcePolicyKeep(t *testing.T) {
	ctx := context.Background()
	ns := envtest.UniqueName("policy")
	a := createBD(t, envtest.UniqueName("bd"), ns, map[string]string{"x.yaml": keptCM("xk", "a"), "y.yaml": cmYAML("yd", "a"), "z.yaml": cmYAML("zs", "a")})
	waitCondition(t, a.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	y := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "yd"}, y); err != nil {
		t.Fatal(err)
	}
	y.Annotations = map[string]string{"helm.sh/resource-policy": "keep"}
	if err := env.Client.Update(ctx, y); err != nil {
		t.Fatal(err)
	}
	xUID, _ := ownerOf(t, &corev1.ConfigMap{}, ns, "xk")
	updateBD(t, a.Name, func(bd *v1alpha2.BundleDeployment) {
		bd.Spec.Sources = source(manifests(t, map[string]string{"z.yaml": cmYAML("zs", "a2")}))
	})
	waitValue(t, ns, "zs", "a2")
	envtest.Eventually(t, 30*time.Second, func() error {
		if _, err := configMapData(t, ns, "yd"); !apierrors.IsNotFound(err) {
			return fmt.Errorf("y (annotated keep by someone else) not pruned: %v", err)
		}
		return nil
	})
	if uid, owner := ownerOf(t, &corev1.ConfigMap{}, ns, "xk"); uid != xUID || owner != string(a.UID) {
		t.Fatalf("x: uid %s labelled for %s; want it kept as it was", uid, owner)
	}
	b := createBD(t, envtest.UniqueName("bd"), ns, map[string]string{"x.yaml": cmYAML("xk", "b")})
	waitCondition(t, b.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	waitValue(t, ns, "xk", "b")
	if uid, owner := ownerOf(t, &corev1.ConfigMap{}, ns, "xk"); uid != xUID || owner != string(b.UID) {
		t.Fatalf("x: uid %s labelled for %s; want it taken over by %s", uid, owner, b.UID)
	}
	// a deleted: x is b's now, untouched.
	deleteAndWait(t, a.Name)
	waitValue(t, ns, "xk", "b")
}

// TestUninstallOutlivesWriteBacks: an aggregating ClusterRole written back
// by the clusterrole-aggregation controller (its server-side apply from a
// stale copy, right after the delete) does not survive the uninstall, and
// the BundleDeployment installs again.
func TestUninstallOutlivesWriteBacks(t *testing.T) {
	ctx := context.Background()
	kube := kubernetes.NewForConfigOrDie(env.Config)
	role := envtest.UniqueName("agg")
	files := map[string]string{"role.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: " + role +
		"\naggregationRule:\n  clusterRoleSelectors:\n  - matchLabels:\n      example.com/aggregate-to-" + role + ": \"true\"\n"}
	bd := createBD(t, envtest.UniqueName("bd"), envtest.UniqueName("agg"), files)
	waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := kube.RbacV1().ClusterRoles().Watch(wctx, metav1.ListOptions{FieldSelector: "metadata.name=" + role})
	if err != nil {
		t.Fatal(err)
	}
	wrote := make(chan error, 1)
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if ev.Type == watch.Deleted {
				cr := rbacv1ac.ClusterRole(role).WithRules(rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("pods").WithVerbs("get"))
				_, err := kube.RbacV1().ClusterRoles().Apply(wctx, cr, metav1.ApplyOptions{FieldManager: "clusterrole-aggregation-controller", Force: true})
				wrote <- err
				return
			}
		}
	}()
	deleteAndWait(t, bd.Name)
	if err := <-wrote; err != nil {
		t.Fatalf("writing the ClusterRole back: %v", err)
	}
	mustNotExist(t, &rbacv1.ClusterRole{}, "", role)
	again := createBD(t, bd.Name, bd.Spec.InstallNamespace, files)
	waitCondition(t, again.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
}

// TestReinstallChecksTheKeptCRD: a reinstall takes its kept CRD back as an
// upgrade of it: a new version of the CRD that custom resources kept with
// it do not fit is refused (CRDUpgradeUnsafe), not applied unchecked.
func TestReinstallChecksTheKeptCRD(t *testing.T) {
	ctx := context.Background()
	ns := envtest.UniqueName("recrd")
	plural := envtest.UniqueName("widgets")
	kind := "W" + strings.ReplaceAll(plural[len("widgets-"):], "-", "")
	v1 := fmt.Sprintf(widgetCRD, plural, kind, plural[:len(plural)-1], "              color: {type: string}\n")
	first := createBD(t, envtest.UniqueName("bd"), ns, map[string]string{"crd.yaml": v1})
	waitCondition(t, first.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	cr := &unstructured.Unstructured{}
	cr.SetAPIVersion("example.com/v1")
	cr.SetKind(kind)
	cr.SetNamespace(ns)
	cr.SetName("w1")
	_ = unstructured.SetNestedField(cr.Object, "blue", "spec", "color")
	envtest.Eventually(t, 20*time.Second, func() error { return env.Client.Create(ctx, cr) })
	deleteAndWait(t, first.Name)

	v2 := fmt.Sprintf(widgetCRD, plural, kind, plural[:len(plural)-1], "              color: {type: string, enum: [red, green]}\n")
	again := createBD(t, first.Name, ns, map[string]string{"crd.yaml": v2})
	waitInstalledMessage(t, again.Name, v1alpha2.ReasonCRDUpgradeUnsafe, "w1", "crdUpgradeSafety")
}
