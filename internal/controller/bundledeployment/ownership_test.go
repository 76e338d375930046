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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/ownership"
	"github.com/rukpak/rukpak/internal/source/configmaps"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// pinned is the source of ConfigMap cm as the manager pins it (with its
// content digest): what anyone who can read the ConfigMap can compute.
func pinned(t *testing.T, cm string) []v1alpha2.BundleSource {
	t.Helper()
	obj := &corev1.ConfigMap{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: v1alpha2.SystemNamespace, Name: cm}, obj); err != nil {
		t.Fatal(err)
	}
	src := source(cm)
	src[0].ConfigMaps[0].Digest = configmaps.Digest(obj)
	return src
}

// installedBD creates a plain BundleDeployment of one ConfigMap app=value
// in a new namespace and waits until it is installed.
func installedBD(t *testing.T, value string) (*v1alpha2.BundleDeployment, string) {
	t.Helper()
	ns := envtest.UniqueName("own")
	bd := newBD(t, ns, manifests(t, map[string]string{"app.yaml": cmYAML("app", value)}))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), bd) })
	return waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled), ns
}

// waitInstalledMessage waits until Installed is False with reason and a
// message holding every one of want, touching the BundleDeployment now and
// then (refusals are also rechecked on a timer).
func waitInstalledMessage(t *testing.T, name, reason string, want ...string) *v1alpha2.BundleDeployment {
	t.Helper()
	bd := &v1alpha2.BundleDeployment{}
	envtest.Eventually(t, 30*time.Second, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
			return err
		}
		c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != reason {
			return fmt.Errorf("Installed = %+v, want False/%s", c, reason)
		}
		for _, w := range want {
			if !strings.Contains(c.Message, w) {
				return fmt.Errorf("Installed message %q does not contain %q", c.Message, w)
			}
		}
		return nil
	})
	return bd
}

// planter returns a client acting as a new user allowed to create Bundles
// and to use the plain class and ConfigMaps cms.
func planter(t *testing.T, cms ...string) client.Client {
	t.Helper()
	ctx := context.Background()
	user := envtest.UniqueName("mallory")
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	objs := []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{"bundles"}, Verbs: []string{"create", "get", "delete"}},
			{APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{"provisionerclasses"}, ResourceNames: []string{v1alpha2.ClassPlain}, Verbs: []string{"use"}},
		}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: v1alpha2.SystemNamespace}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: cms, Verbs: []string{"use"}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: v1alpha2.SystemNamespace}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user}},
	}
	for _, obj := range objs {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestPlantedBundleIsNeverInstalled: a Bundle someone else created under
// the name the next revision will get is refused with BundleNotOwned naming
// it and why, nothing of it is applied, it is not deleted, and once it is
// gone the revision installs.
func TestPlantedBundleIsNeverInstalled(t *testing.T) {
	tests := []struct {
		name string
		// forge sets the planted Bundle's ownerReferences and labels.
		forge func(bd *v1alpha2.BundleDeployment, b *v1alpha2.Bundle)
		// exact plants the very spec the revision pins (only the writer
		// and owner give it away); otherwise it carries other content.
		exact bool
		want  string
	}{
		{name: "no controller", want: "it has no controller"},
		{name: "labelled, no controller", forge: func(bd *v1alpha2.BundleDeployment, b *v1alpha2.Bundle) {
			b.Labels = map[string]string{v1alpha2.LabelBundleDeployment: bd.Name}
		}, want: "it has no controller"},
		{name: "forged controller with a stale uid", forge: func(bd *v1alpha2.BundleDeployment, b *v1alpha2.Bundle) {
			ref := *metav1.NewControllerRef(bd, v1alpha2.GroupVersion.WithKind(v1alpha2.BundleDeploymentKind))
			ref.UID = "uid-of-a-deleted-one"
			b.OwnerReferences = []metav1.OwnerReference{ref}
			b.Labels = map[string]string{v1alpha2.LabelBundleDeployment: bd.Name}
		}, want: "its controller is a BundleDeployment"},
		{name: "forged controller with the right uid, other content", forge: func(bd *v1alpha2.BundleDeployment, b *v1alpha2.Bundle) {
			b.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(bd, v1alpha2.GroupVersion.WithKind(v1alpha2.BundleDeploymentKind))}
			b.Labels = map[string]string{v1alpha2.LabelBundleDeployment: bd.Name}
		}, want: `it was written by "mallory-`},
		{name: "forged controller with the right uid, the pinned content", exact: true, forge: func(bd *v1alpha2.BundleDeployment, b *v1alpha2.Bundle) {
			b.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(bd, v1alpha2.GroupVersion.WithKind(v1alpha2.BundleDeploymentKind))}
			b.Labels = map[string]string{v1alpha2.LabelBundleDeployment: bd.Name}
		}, want: `", not by rukpak`},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			bd, ns := installedBD(t, "v1")
			next := manifests(t, map[string]string{"app.yaml": cmYAML("app", "v2")})
			evil := manifests(t, map[string]string{"app.yaml": cmYAML("app", "planted"), "x.yaml": cmYAML("planted", "x")})
			nextPinned := pinned(t, next)
			name := ownership.RevisionName(bd.Name, v1alpha2.BundleSpec{ProvisionerClassName: v1alpha2.ClassPlain, Sources: nextPinned}, "")
			planted := &v1alpha2.Bundle{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec:       v1alpha2.BundleSpec{ProvisionerClassName: v1alpha2.ClassPlain, Sources: source(evil)},
			}
			if tt.exact {
				planted.Spec.Sources = nextPinned
			}
			if tt.forge != nil {
				tt.forge(bd, planted)
			}
			// Planted by a user allowed to write Bundles (an admin's
			// choice), who may use the class and both ConfigMaps.
			if err := planter(t, next, evil).Create(ctx, planted); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = env.Client.Delete(ctx, planted) })

			updateBD(t, bd.Name, func(bd *v1alpha2.BundleDeployment) { bd.Spec.Sources = source(next) })
			got := waitInstalledMessage(t, bd.Name, v1alpha2.ReasonBundleNotOwned,
				"Bundle "+name+" is not a revision created by BundleDeployment "+bd.Name, tt.want)
			if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha2.TypeUnpacked); c == nil || c.Reason != v1alpha2.ReasonBundleNotOwned {
				t.Errorf("Unpacked = %+v, want reason BundleNotOwned", c)
			}
			// Nothing of it applied, the installed revision kept, the
			// planted Bundle left alone.
			if data, err := configMapData(t, ns, "app"); err != nil || data["value"] != "v1" {
				t.Fatalf("app = %v, %v; want the installed v1", data, err)
			}
			mustNotExist(t, &corev1.ConfigMap{}, ns, "planted")
			if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &v1alpha2.Bundle{}); err != nil {
				t.Fatalf("the planted Bundle: %v; rukpak must not delete what it did not create", err)
			}
			if i > 1 {
				return // the recovery is the same for every case
			}
			// Its writer removes it: the revision is created and installed.
			if err := env.Client.Delete(ctx, planted); err != nil {
				t.Fatal(err)
			}
			waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
			waitValue(t, ns, "app", "v2")
		})
	}
}

// TestStatusNamingAnotherTeamsBundle: status.activeBundle and
// status.lastHealthyBundle pointed at another BundleDeployment's Bundle
// are refused (BundleNotOwned naming the field and the Bundle) and
// cleared; the other team's content is never applied here and its Bundle
// is not deleted.
func TestStatusNamingAnotherTeamsBundle(t *testing.T) {
	ctx := context.Background()
	victim, _ := installedBD(t, "victim")
	hostile, ns := installedBD(t, "mine")
	for _, field := range []string{"activeBundle", "lastHealthyBundle"} {
		t.Run(field, func(t *testing.T) {
			envtest.Eventually(t, 10*time.Second, func() error {
				bd := &v1alpha2.BundleDeployment{}
				if err := env.Client.Get(ctx, client.ObjectKey{Name: hostile.Name}, bd); err != nil {
					return err
				}
				if field == "activeBundle" {
					bd.Status.ActiveBundle = victim.Status.ActiveBundle
				} else {
					bd.Status.LastHealthyBundle = victim.Status.ActiveBundle
				}
				return env.Client.Status().Update(ctx, bd)
			})
			touch(t, hostile.Name)
			got := waitInstalledMessage(t, hostile.Name, v1alpha2.ReasonBundleNotOwned,
				"status."+field+" names Bundle "+victim.Status.ActiveBundle, "its controller is BundleDeployment "+victim.Name)
			if got.Status.ActiveBundle == victim.Status.ActiveBundle || got.Status.LastHealthyBundle == victim.Status.ActiveBundle {
				t.Fatalf("status still names the other team's Bundle: %+v", got.Status)
			}
			if data, err := configMapData(t, ns, "app"); err != nil || data["value"] != "mine" {
				t.Fatalf("app = %v, %v; want this team's own content", data, err)
			}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: victim.Status.ActiveBundle}, &v1alpha2.Bundle{}); err != nil {
				t.Fatalf("the other team's Bundle: %v", err)
			}
			// The next reconcile finds nothing wrong.
			touch(t, hostile.Name)
			waitCondition(t, hostile.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
		})
	}
}

// owned labels an object as managed by BundleDeployment name with uid.
func ownedBy(name string, uid types.UID) map[string]string {
	return map[string]string{v1alpha2.LabelOwnerKind: v1alpha2.BundleDeploymentKind, v1alpha2.LabelOwnerName: name, v1alpha2.LabelOwnerUID: string(uid)}
}

// TestObjectOfADeletedBundleDeployment: an object labelled for a
// BundleDeployment that no longer exists is a collision under Prevent (the
// default), naming the object and the stale owner; None adopts it.
func TestObjectOfADeletedBundleDeployment(t *testing.T) {
	tests := []struct {
		name   string
		policy v1alpha2.CollisionProtection
		adopt  bool
	}{
		{name: "Prevent (default) refuses", policy: ""},
		{name: "None adopts", policy: v1alpha2.CollisionProtectionNone, adopt: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			ns := envtest.UniqueName("orphan")
			existing(t, ns, "app", false)
			gone := envtest.UniqueName("gone")
			obj := &corev1.ConfigMap{}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, obj); err != nil {
				t.Fatal(err)
			}
			obj.Labels = ownedBy(gone, "uid-of-"+types.UID(gone))
			if err := env.Client.Update(ctx, obj); err != nil {
				t.Fatal(err)
			}
			bd := &v1alpha2.BundleDeployment{
				ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("bd")},
				Spec: v1alpha2.BundleDeploymentSpec{
					ProvisionerClassName: v1alpha2.ClassPlain, InstallNamespace: ns, CollisionProtection: tt.policy,
					Sources: source(manifests(t, map[string]string{"app.yaml": cmYAML("app", "ours"), "b.yaml": cmYAML("other", "ours")})),
				},
			}
			if err := env.Client.Create(ctx, bd); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = env.Client.Delete(ctx, bd) })
			if tt.adopt {
				waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
				waitValue(t, ns, "app", "ours")
				return
			}
			waitInstalledMessage(t, bd.Name, v1alpha2.ReasonCollision, "ConfigMap "+ns+"/app",
				"labelled as managed by BundleDeployment "+gone+" (uid uid-of-"+gone+"), which no longer exists")
			mustNotExist(t, &corev1.ConfigMap{}, ns, "other")
			if data, _ := configMapData(t, ns, "app"); data["value"] != "theirs" {
				t.Fatalf("the stale owner's object changed: %v", data)
			}
		})
	}
}

// TestNameReuseAdoptsNothing: a BundleDeployment created under the name of
// a deleted one whose finalizer was removed by hand (its objects and
// inventory left behind) does not adopt the old objects, does not prune
// them as its own, and does not delete them when it is deleted.
func TestNameReuseAdoptsNothing(t *testing.T) {
	ctx := context.Background()
	old, ns := installedBD(t, "old")
	// Two old objects: one the new BundleDeployment's bundle also has, one
	// it does not.
	updateBD(t, old.Name, func(bd *v1alpha2.BundleDeployment) {
		bd.Spec.Sources = source(manifests(t, map[string]string{"app.yaml": cmYAML("app", "old"), "left.yaml": cmYAML("left", "old")}))
	})
	waitValue(t, ns, "left", "old")
	waitCondition(t, old.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	// Its finalizer removed by hand, then deleted: nothing is cleaned up.
	// The delete is made only on the version without the finalizer: the
	// manager puts a missing finalizer back, and a delete after that
	// would clean up as usual.
	envtest.Eventually(t, 10*time.Second, func() error {
		bd := &v1alpha2.BundleDeployment{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: old.Name}, bd); err != nil {
			return err
		}
		bd.Finalizers = nil
		if err := env.Client.Update(ctx, bd); err != nil {
			return err
		}
		return env.Client.Delete(ctx, bd, client.Preconditions{UID: &bd.UID, ResourceVersion: &bd.ResourceVersion})
	})
	envtest.Eventually(t, 10*time.Second, func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: old.Name}, &v1alpha2.BundleDeployment{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("old BundleDeployment still there: %v", err)
		}
		return nil
	})
	if data, err := configMapData(t, ns, "left"); err != nil || data["value"] != "old" {
		t.Fatalf("old object left = %v, %v; the test needs it left behind", data, err)
	}

	reused := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: old.Name},
		Spec: v1alpha2.BundleDeploymentSpec{ProvisionerClassName: v1alpha2.ClassPlain, InstallNamespace: ns,
			Sources: source(manifests(t, map[string]string{"app.yaml": cmYAML("app", "new")}))},
	}
	if err := env.Client.Create(ctx, reused); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, reused) })
	waitInstalledMessage(t, reused.Name, v1alpha2.ReasonCollision, "ConfigMap "+ns+"/app",
		fmt.Sprintf("labelled as managed by BundleDeployment %s (uid %s), which no longer exists", old.Name, old.UID))
	if data, _ := configMapData(t, ns, "app"); data["value"] != "old" {
		t.Fatalf("the old object was adopted: %v", data)
	}

	// With a bundle of its own objects only, it installs them and prunes
	// nothing of the old one's.
	updateBD(t, reused.Name, func(bd *v1alpha2.BundleDeployment) {
		bd.Spec.Sources = source(manifests(t, map[string]string{"own.yaml": cmYAML("own", "new")}))
	})
	waitCondition(t, reused.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	waitValue(t, ns, "own", "new")
	for _, n := range []string{"app", "left"} {
		if data, err := configMapData(t, ns, n); err != nil || data["value"] != "old" {
			t.Fatalf("old object %s = %v, %v; want it left in place", n, data, err)
		}
	}
	// Deleting it removes its own object only.
	if err := env.Client.Delete(ctx, reused); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 30*time.Second, func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: reused.Name}, &v1alpha2.BundleDeployment{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("BundleDeployment still there: %v", err)
		}
		return nil
	})
	mustNotExist(t, &corev1.ConfigMap{}, ns, "own")
	for _, n := range []string{"app", "left"} {
		if _, err := configMapData(t, ns, n); err != nil {
			t.Fatalf("old object %s: %v; the new BundleDeployment must not delete it", n, err)
		}
	}
}

// TestUninstallWaitsForItsServiceAccount: deleting a BundleDeployment whose
// ServiceAccount is gone does not delete its objects as the manager: it
// waits, saying so (DeletionBlocked naming the ServiceAccount), and
// finishes once the ServiceAccount is back.
func TestUninstallWaitsForItsServiceAccount(t *testing.T) {
	ctx := context.Background()
	ns := envtest.UniqueName("gonesa")
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	sa := installer(t, ns)
	bd := saBD(t, env.Client, ns, manifests(t, map[string]string{"app.yaml": cmYAML("app", "v1")}), sa)
	waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	if err := env.Client.Delete(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, bd); err != nil {
		t.Fatal(err)
	}
	got := &v1alpha2.BundleDeployment{}
	envtest.Eventually(t, 30*time.Second, func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: bd.Name}, got); err != nil {
			return err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha2.TypeInstalled)
		if c == nil || c.Reason != v1alpha2.ReasonDeletionBlocked {
			return fmt.Errorf("Installed = %+v, want DeletionBlocked", c)
		}
		if want := "ServiceAccount " + ns + "/" + sa + ", which installed them, is gone"; !strings.Contains(c.Message, want) {
			return fmt.Errorf("message %q does not contain %q", c.Message, want)
		}
		return nil
	})
	if data, err := configMapData(t, ns, "app"); err != nil || data["value"] != "v1" {
		t.Fatalf("app = %v, %v; want it left in place while the deletion waits", data, err)
	}
	// The ServiceAccount is back (its Role and binding never left): the
	// deletion finishes as it.
	if err := env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	touch(t, bd.Name)
	envtest.Eventually(t, 30*time.Second, func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: bd.Name}, &v1alpha2.BundleDeployment{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("BundleDeployment still there: %v", err)
		}
		return nil
	})
	mustNotExist(t, &corev1.ConfigMap{}, ns, "app")
}
