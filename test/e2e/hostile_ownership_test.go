package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/ownership"
	"github.com/rukpak/rukpak/internal/source/configmaps"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// Ownership attacks: a BundleDeployment installs only Bundles it created
// and adopts nothing it did not create (docs/security.md, "Ownership").

// installedTeamBD creates a BundleDeployment of team's installing files,
// waits until it is installed and returns it.
func installedTeamBD(t *testing.T, team *hostileTeam, prefix string, files map[string]string) *v1alpha2.BundleDeployment {
	t.Helper()
	bd := team.bd(envtest.UniqueName(prefix), v1alpha2.ClassPlain, ownSource(t, files))
	team.create(t, bd)
	return waitInstalled(t, bd.Name)
}

// pinnedSources is srcs (one configMaps source) as the manager pins them:
// with the ConfigMap's content digest, which anyone who can read it can
// compute.
func pinnedSources(t *testing.T, srcs []v1alpha2.BundleSource) []v1alpha2.BundleSource {
	t.Helper()
	out := []v1alpha2.BundleSource{*srcs[0].DeepCopy()}
	cm := &corev1.ConfigMap{}
	if err := suite.client.Get(context.Background(), client.ObjectKey{Namespace: v1alpha2.SystemNamespace, Name: out[0].ConfigMaps[0].ConfigMap.Name}, cm); err != nil {
		t.Fatal(err)
	}
	out[0].ConfigMaps[0].Digest = configmaps.Digest(cm)
	return out
}

// ownedLabels label an object as managed by BundleDeployment name (uid).
func ownedLabels(name string, uid types.UID) map[string]string {
	return map[string]string{v1alpha2.LabelOwnerKind: v1alpha2.BundleDeploymentKind, v1alpha2.LabelOwnerName: name, v1alpha2.LabelOwnerUID: string(uid)}
}

// mustBeAbsent fails the test if ConfigMap ns/name exists.
func mustBeAbsent(t *testing.T, ns, name string) {
	t.Helper()
	err := suite.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("ConfigMap %s/%s: %v; want it never created", ns, name, err)
	}
}

var _ = registerHostile(
	hostileCase{
		// The team, given create on Bundles for the test (as an admin may
		// allow someone), predicts the next revision's name from the hash
		// of its pinned spec and plants a Bundle there with other content,
		// a forged controller reference (the BundleDeployment's UID) and
		// its label, then asks for that revision.
		name: "a Bundle planted under the next revision's name is never installed",
		attack: func(t *testing.T, team *hostileTeam) func(*testing.T) {
			ctx := context.Background()
			bd := installedTeamBD(t, team, "planted", map[string]string{"app.yaml": configMapYAML("app", "v1")})
			next := ownSource(t, map[string]string{"app.yaml": configMapYAML("app", "v2")})
			evil := ownSource(t, map[string]string{"app.yaml": configMapYAML("app", "planted"), "x.yaml": configMapYAML("planted", "x")})
			name := ownership.RevisionName(bd.Name, v1alpha2.BundleSpec{ProvisionerClassName: v1alpha2.ClassPlain, Sources: pinnedSources(t, next)}, "")
			ref := metav1.NewControllerRef(bd, v1alpha2.GroupVersion.WithKind(v1alpha2.BundleDeploymentKind))
			ref.BlockOwnerDeletion = nil
			planted := &v1alpha2.Bundle{
				ObjectMeta: metav1.ObjectMeta{
					Name:            name,
					Labels:          map[string]string{v1alpha2.LabelBundleDeployment: bd.Name},
					OwnerReferences: []metav1.OwnerReference{*ref},
				},
				Spec: v1alpha2.BundleSpec{ProvisionerClassName: v1alpha2.ClassPlain, Sources: evil},
			}
			grantTo(t, team.user, "", rbacv1.PolicyRule{APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{"bundles"}, Verbs: []string{"create"}})
			waitAllowed(t, team.user, []string{team.ns}, authorizationv1.ResourceAttributes{Verb: "create", Group: v1alpha2.GroupVersion.Group, Resource: "bundles"}, true)
			team.allowReferences(t, evil, nil)
			if err := team.client.Create(ctx, planted); err != nil {
				t.Fatalf("planting Bundle %s as %s: %v", name, team.user, err)
			}
			t.Cleanup(func() { _ = suite.client.Delete(context.Background(), planted) })
			team.allowReferences(t, next, nil)
			envtest.Eventually(t, 10*time.Second, func() error {
				cur := &v1alpha2.BundleDeployment{}
				if err := team.client.Get(ctx, client.ObjectKey{Name: bd.Name}, cur); err != nil {
					return err
				}
				cur.Spec.Sources = next
				return team.client.Update(ctx, cur)
			})
			return func(t *testing.T) {
				conditionMessage(t, bd.Name, v1alpha2.TypeInstalled, v1alpha2.ReasonBundleNotOwned,
					"Bundle "+name+" is not a revision created by BundleDeployment "+bd.Name, fmt.Sprintf("it was written by %q, not by rukpak", team.user),
					"revision "+bd.Status.ActiveBundle+" remains installed")
				if got := configMapValue(t, team.ns, "app"); got != "v1" {
					t.Fatalf("app holds %q; want the installed v1, nothing of the planted Bundle", got)
				}
				mustBeAbsent(t, team.ns, "planted")
				if err := suite.client.Get(ctx, client.ObjectKey{Name: name}, &v1alpha2.Bundle{}); err != nil {
					t.Fatalf("the planted Bundle: %v; rukpak must not delete what it did not create", err)
				}
			}
		},
	},
	hostileCase{
		// Anyone with bundledeployments/status (the admin here, as a
		// stand-in) points the team's status.activeBundle and
		// status.lastHealthyBundle at another team's Bundle, hoping rukpak
		// re-applies that content (rendered as the team's ServiceAccount,
		// into the team's namespace) or deletes it in history cleanup.
		name: "status pointing activeBundle at another team's Bundle is refused",
		attack: func(t *testing.T, team *hostileTeam) func(*testing.T) {
			ctx := context.Background()
			victimNS := testNamespace(t, "victim")
			victimSA := installerAccount(t, victimNS)
			victim := &v1alpha2.BundleDeployment{
				ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("victim")},
				Spec: v1alpha2.BundleDeploymentSpec{ProvisionerClassName: v1alpha2.ClassPlain, InstallNamespace: victimNS,
					ServiceAccount: &v1alpha2.ServiceAccountReference{Name: victimSA},
					Sources:        ownSource(t, map[string]string{"secret.yaml": configMapYAML("victim-data", "private")})},
			}
			cleanupBD(t, victim.Name)
			if err := suite.client.Create(ctx, victim); err != nil {
				t.Fatal(err)
			}
			victim = waitInstalled(t, victim.Name)
			stolen := victim.Status.ActiveBundle
			bd := installedTeamBD(t, team, "pointer", map[string]string{"app.yaml": configMapYAML("app", "mine")})
			patch, _ := json.Marshal(map[string]any{"status": map[string]any{"activeBundle": stolen, "lastHealthyBundle": stolen}})
			if err := suite.client.Status().Patch(ctx, bd, client.RawPatch(types.MergePatchType, patch)); err != nil {
				t.Fatal(err)
			}
			// The team makes rukpak look again (a retry).
			envtest.Eventually(t, 10*time.Second, func() error {
				cur := &v1alpha2.BundleDeployment{}
				if err := team.client.Get(ctx, client.ObjectKey{Name: bd.Name}, cur); err != nil {
					return err
				}
				if cur.Annotations == nil {
					cur.Annotations = map[string]string{}
				}
				cur.Annotations[v1alpha2.AnnotationRetry] = time.Now().Format(time.RFC3339Nano)
				return team.client.Update(ctx, cur)
			})
			return func(t *testing.T) {
				conditionMessage(t, bd.Name, v1alpha2.TypeInstalled, v1alpha2.ReasonBundleNotOwned,
					"status.activeBundle names Bundle "+stolen, "status.lastHealthyBundle names Bundle "+stolen,
					"its controller is BundleDeployment "+victim.Name)
				got := &v1alpha2.BundleDeployment{}
				if err := suite.client.Get(ctx, client.ObjectKey{Name: bd.Name}, got); err != nil {
					t.Fatal(err)
				}
				if got.Status.ActiveBundle == stolen || got.Status.LastHealthyBundle == stolen {
					t.Fatalf("status still names the other team's Bundle: active %q, last healthy %q", got.Status.ActiveBundle, got.Status.LastHealthyBundle)
				}
				mustBeAbsent(t, team.ns, "victim-data")
				if err := suite.client.Get(ctx, client.ObjectKey{Name: stolen}, &v1alpha2.Bundle{}); err != nil {
					t.Fatalf("the other team's Bundle: %v", err)
				}
				if got := configMapValue(t, victimNS, "victim-data"); got != "private" {
					t.Fatalf("the other team's object holds %q", got)
				}
			}
		},
	},
	hostileCase{
		// An object in the team's namespace labelled as managed by a
		// BundleDeployment that no longer exists: Prevent (the default)
		// does not adopt it.
		name: "an object labelled for a deleted BundleDeployment is not adopted",
		attack: func(t *testing.T, team *hostileTeam) func(*testing.T) {
			gone := envtest.UniqueName("gone")
			uid := types.UID("0000aaaa-" + gone)
			createOwned(t, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: team.ns, Labels: ownedLabels(gone, uid)},
				Data:       map[string]string{"value": "left behind"},
			})
			bd := team.bd(envtest.UniqueName("orphan"), v1alpha2.ClassPlain,
				ownSource(t, map[string]string{"app.yaml": configMapYAML("app", "mine"), "b.yaml": configMapYAML("other", "mine")}))
			team.create(t, bd)
			return func(t *testing.T) {
				conditionMessage(t, bd.Name, v1alpha2.TypeInstalled, v1alpha2.ReasonCollision,
					"ConfigMap "+team.ns+"/app", fmt.Sprintf("labelled as managed by BundleDeployment %s (uid %s), which no longer exists", gone, uid))
				if got := configMapValue(t, team.ns, "app"); got != "left behind" {
					t.Fatalf("the orphan holds %q; want it untouched", got)
				}
				mustBeAbsent(t, team.ns, "other")
			}
		},
	},
	hostileCase{
		// The team deletes a BundleDeployment of its own that left an
		// object in place (helm.sh/resource-policy: keep), released in
		// rukpak's record. Then the labels of that BundleDeployment and
		// annotations that look like a release are written on an object
		// of someone else's in the team's namespace (by the admin here,
		// as a stand-in for a team allowed to write labels there), and
		// the team names the object in a new BundleDeployment.
		name: "labels and annotations forged to look released take nothing",
		attack: func(t *testing.T, team *hostileTeam) func(*testing.T) {
			ctx := context.Background()
			keep := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kept\n  annotations: {helm.sh/resource-policy: keep}\ndata: {value: kept}\n"
			releaser := installedTeamBD(t, team, "releaser", map[string]string{"kept.yaml": keep})
			if err := team.client.Delete(ctx, releaser); err != nil {
				t.Fatal(err)
			}
			waitGone(t, &v1alpha2.BundleDeployment{}, "", releaser.Name)
			t.Cleanup(func() {
				_ = suite.client.Delete(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: v1alpha2.SystemNamespace, Name: "released-" + string(releaser.UID)}})
			})
			createOwned(t, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: team.ns},
				Data:       map[string]string{"value": "someone else's"},
			})
			envtest.Eventually(t, 10*time.Second, func() error {
				cm := &corev1.ConfigMap{}
				if err := suite.client.Get(ctx, client.ObjectKey{Namespace: team.ns, Name: "shared"}, cm); err != nil {
					return err
				}
				cm.Labels = ownedLabels(releaser.Name, releaser.UID)
				cm.Annotations = map[string]string{"core.rukpak.io/released": "true", "helm.sh/resource-policy": "keep"}
				return suite.client.Update(ctx, cm)
			})
			bd := team.bd(envtest.UniqueName("taker"), v1alpha2.ClassPlain, ownSource(t, map[string]string{"shared.yaml": configMapYAML("shared", "mine")}))
			team.create(t, bd)
			return func(t *testing.T) {
				conditionMessage(t, bd.Name, v1alpha2.TypeInstalled, v1alpha2.ReasonCollision, "ConfigMap "+team.ns+"/shared",
					fmt.Sprintf("labelled as managed by BundleDeployment %s (uid %s), which no longer exists (a stale owner) and did not release it", releaser.Name, releaser.UID))
				if got := configMapValue(t, team.ns, "shared"); got != "someone else's" {
					t.Fatalf("the forged object holds %q; want it untouched", got)
				}
			}
		},
	},
	hostileCase{
		// A BundleDeployment is deleted with its finalizer removed by hand
		// (its objects and inventory left behind); a new one under the
		// same name must adopt nothing of the old one's.
		name: "a new BundleDeployment reusing a deleted one's name adopts nothing",
		attack: func(t *testing.T, team *hostileTeam) func(*testing.T) {
			ctx := context.Background()
			old := installedTeamBD(t, team, "reuse", map[string]string{"app.yaml": configMapYAML("app", "old")})
			t.Cleanup(func() {
				// The old inventory stays behind (tied to the old UID);
				// the test removes it.
				_ = suite.client.DeleteAllOf(context.Background(), &corev1.ConfigMap{}, client.InNamespace(v1alpha2.SystemNamespace),
					client.MatchingLabels{"core.rukpak.io/inventory-uid": string(old.UID)})
			})
			envtest.Eventually(t, 10*time.Second, func() error {
				cur := &v1alpha2.BundleDeployment{}
				if err := suite.client.Get(ctx, client.ObjectKey{Name: old.Name}, cur); err != nil {
					return err
				}
				cur.Finalizers = nil
				if err := suite.client.Update(ctx, cur); err != nil {
					return err
				}
				// Deleted only as it is without the finalizer: the manager
				// puts a missing finalizer back, and a delete after that
				// would clean up as usual.
				return team.client.Delete(ctx, cur, client.Preconditions{UID: &cur.UID, ResourceVersion: &cur.ResourceVersion})
			})
			envtest.Eventually(t, 30*time.Second, func() error {
				if err := suite.client.Get(ctx, client.ObjectKey{Name: old.Name}, &v1alpha2.BundleDeployment{}); !apierrors.IsNotFound(err) {
					return fmt.Errorf("old BundleDeployment still there: %v", err)
				}
				return nil
			})
			reused := team.bd(old.Name, v1alpha2.ClassPlain, ownSource(t, map[string]string{"app.yaml": configMapYAML("app", "new")}))
			team.create(t, reused)
			return func(t *testing.T) {
				conditionMessage(t, reused.Name, v1alpha2.TypeInstalled, v1alpha2.ReasonCollision, "ConfigMap "+team.ns+"/app",
					fmt.Sprintf("labelled as managed by BundleDeployment %s (uid %s), which no longer exists", old.Name, old.UID))
				if got := configMapValue(t, team.ns, "app"); got != "old" {
					t.Fatalf("the old object holds %q; want it not adopted", got)
				}
			}
		},
	},
)
