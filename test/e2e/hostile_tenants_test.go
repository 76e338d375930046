package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// Attacks of issue 24 ("Tenants, round two"): a team reads another team's
// upload by naming its digest, and uninstalls (or pins) another team's
// install with a metadata-only update, without delete.

// ghostOwner is an owner reference to a cluster-scoped object that does
// not exist: the garbage collector deletes whatever carries it.
var ghostOwner = metav1.OwnerReference{APIVersion: "v1", Kind: "Namespace", Name: "gone-for-ever",
	UID: types.UID("00000000-0000-0000-0000-000000000024")}

// patchAs applies mutate to a fresh copy of obj with a merge patch as c
// and returns the API server's answer.
func patchAs(t *testing.T, c client.Client, obj client.Object, mutate func(client.Object)) error {
	t.Helper()
	cur := obj.DeepCopyObject().(client.Object)
	if err := suite.client.Get(context.Background(), client.ObjectKeyFromObject(obj), cur); err != nil {
		t.Fatal(err)
	}
	changed := cur.DeepCopyObject().(client.Object)
	mutate(changed)
	return c.Patch(context.Background(), changed, client.MergeFrom(cur))
}

// lifecycleAttempt is one metadata-only change a team tries on another
// team's object, and what the refusal must say.
type lifecycleAttempt struct {
	what   string
	mutate func(client.Object)
	want   []string
}

var _ = registerHostile(
	// Attack 1: team A uploads (rukpakctl run, as its ServiceAccount) a
	// bundle holding what only A should read; its digest is in A's
	// BundleDeployment, which every team can read. Team B names that
	// digest in its own BundleDeployment, to have it installed into B's
	// namespace as B's ServiceAccount. The manager refuses before anything
	// is unpacked: B did not upload it, and no one granted it.
	hostileCase{
		name: "another team installs a team's upload by naming its digest",
		attack: func(t *testing.T, team *hostileTeam) func(*testing.T) {
			victim := newHostileTeam(t)
			victimBD := envtest.UniqueName("victim")
			runAs(t, victim, allowUploads(t, victim), victimBD, "victim's secret value")
			waitInstalled(t, victimBD)
			digest := activeUpload(t, victimBD)
			bd := team.bd(envtest.UniqueName("borrow-upload"), v1alpha2.ClassPlain, []v1alpha2.BundleSource{{
				Type: v1alpha2.SourceTypeUpload, Upload: &v1alpha2.UploadSource{Digest: digest}}})
			team.create(t, bd)
			return func(t *testing.T) {
				hex := strings.TrimPrefix(digest, "sha256:")
				conditionMessage(t, bd.Name, v1alpha2.TypeInstalled, v1alpha2.ReasonNotAuthorized,
					`user "`+team.user+`"`,
					"may not use upload "+digest+", named by spec.sources[0].upload.digest",
					`neither the user nor the install identity "system:serviceaccount:`+team.ns+`:`+team.sa+`" uploaded it`,
					`grant it with a ClusterRole allowing verb "use" on uploads (apiGroups ["core.rukpak.io"]) with resourceNames ["`+hex+`"]`)
				got := &v1alpha2.BundleDeployment{}
				if err := suite.client.Get(context.Background(), client.ObjectKey{Name: bd.Name}, got); err != nil {
					t.Fatal(err)
				}
				if len(got.Status.ResolvedSources) != 0 || got.Status.ActiveBundle != "" {
					t.Fatalf("the refused BundleDeployment resolved %v, active bundle %q", got.Status.ResolvedSources, got.Status.ActiveBundle)
				}
				mustBeAbsent(t, team.ns, "uploaded")
				if v := configMapValue(t, victim.ns, "uploaded"); v != "victim's secret value" {
					t.Fatalf("the victim's ConfigMap holds %q", v)
				}
			}
		},
	},
	// Attack 2: a team that may update BundleDeployments but not delete
	// them (nor act as another team) gives another team's BundleDeployment
	// an owner that does not exist — the garbage collector would delete it
	// and rukpak uninstall everything — or plants a finalizer that holds
	// its delete for ever, removes rukpak's finalizer, or retries it. The
	// API server refuses each patch (rukpak-install-authorization), on a
	// cluster without OwnerReferencesPermissionEnforcement.
	hostileCase{
		name: "another team plants an owner reference or a finalizer on a team's BundleDeployment",
		attack: func(t *testing.T, team *hostileTeam) func(*testing.T) {
			victim := newHostileTeam(t)
			bd := installedTeamBD(t, victim, "victim", map[string]string{"cm.yaml": configMapYAML("precious", "kept")})
			notAs := func(what string) []string {
				return []string{`changing ` + what + ` of BundleDeployment "` + bd.Name + `" needs the rights to create it as it stands`,
					`user "` + team.user + `" may not impersonate serviceaccounts "` + victim.sa + `" in namespace "` + victim.ns + `"`,
					"rukpak-install-authorization"}
			}
			attempts := []lifecycleAttempt{
				{"an owner that does not exist", func(o client.Object) { o.SetOwnerReferences(append(o.GetOwnerReferences(), ghostOwner)) },
					notAs("metadata.ownerReferences")},
				{"a finalizer of its own", func(o client.Object) { o.SetFinalizers(append(o.GetFinalizers(), "hostile.example/block")) },
					notAs("metadata.finalizers")},
				{"rukpak's finalizer removed", func(o client.Object) {
					o.SetFinalizers(slices.DeleteFunc(o.GetFinalizers(), func(f string) bool { return f == v1alpha2.FinalizerCleanup }))
				}, []string{`user "` + team.user + `" may not add or remove the finalizer core.rukpak.io/cleanup of BundleDeployment "` + bd.Name + `"`,
					"only by the rukpak manager"}},
				{"a retry", func(o client.Object) {
					a := o.GetAnnotations() // the requested-by annotations stay
					a[v1alpha2.AnnotationRetry] = "now"
					o.SetAnnotations(a)
				}, notAs("annotation core.rukpak.io/retry")},
			}
			errs := make([]error, len(attempts))
			for i, a := range attempts {
				errs[i] = patchAs(t, team.client, bd, a.mutate)
			}
			return func(t *testing.T) {
				for i, a := range attempts {
					if !apierrors.IsForbidden(errs[i]) {
						t.Fatalf("patching %s onto the victim's BundleDeployment: %v, want Forbidden", a.what, errs[i])
					}
					errContains(t, errs[i], a.want...)
				}
				got := &v1alpha2.BundleDeployment{}
				if err := suite.client.Get(context.Background(), client.ObjectKey{Name: bd.Name}, got); err != nil {
					t.Fatalf("the victim's BundleDeployment: %v", err)
				}
				if got.DeletionTimestamp != nil || len(got.OwnerReferences) != 0 || !slices.Equal(got.Finalizers, bd.Finalizers) ||
					got.Annotations[v1alpha2.AnnotationRetry] != "" {
					t.Fatalf("the victim's BundleDeployment changed: deletion %v, owners %v, finalizers %v (were %v), retry %q",
						got.DeletionTimestamp, got.OwnerReferences, got.Finalizers, bd.Finalizers, got.Annotations[v1alpha2.AnnotationRetry])
				}
				if v := configMapValue(t, victim.ns, "precious"); v != "kept" {
					t.Fatalf("the victim's ConfigMap holds %q", v)
				}
			}
		},
	},
	// The same on a Bundle: a team an admin let patch Bundles plants a
	// finalizer on another team's revision (its delete, and so history
	// clean-up and uninstall, would hang) or removes its owner.
	hostileCase{
		name: "another team plants a finalizer on a team's Bundle",
		attack: func(t *testing.T, team *hostileTeam) func(*testing.T) {
			victim := newHostileTeam(t)
			bd := installedTeamBD(t, victim, "victim", map[string]string{"cm.yaml": configMapYAML("precious", "kept")})
			grantTo(t, team.user, "", rbacv1.PolicyRule{APIGroups: []string{v1alpha2.GroupVersion.Group},
				Resources: []string{"bundles"}, Verbs: []string{"get", "update", "patch"}})
			waitAllowed(t, team.user, []string{team.ns}, authorizationv1.ResourceAttributes{Verb: "patch", Group: v1alpha2.GroupVersion.Group, Resource: "bundles"}, true)
			revision := &v1alpha2.Bundle{ObjectMeta: metav1.ObjectMeta{Name: bd.Status.ActiveBundle}}
			if err := suite.client.Get(context.Background(), client.ObjectKeyFromObject(revision), revision); err != nil {
				t.Fatalf("the victim's revision %q: %v", bd.Status.ActiveBundle, err)
			}
			finalizer := patchAs(t, team.client, revision, func(o client.Object) { o.SetFinalizers(append(o.GetFinalizers(), "hostile.example/block")) })
			orphan := patchAs(t, team.client, revision, func(o client.Object) { o.SetOwnerReferences(nil) })
			return func(t *testing.T) {
				for what, err := range map[string]error{"metadata.finalizers": finalizer, "metadata.ownerReferences": orphan} {
					if !apierrors.IsForbidden(err) {
						t.Fatalf("changing %s of the victim's Bundle: %v, want Forbidden", what, err)
					}
					errContains(t, err, `user "`+team.user+`" may not change `+what+` of Bundle "`+revision.Name+`"`,
						`it is a revision of BundleDeployment "`+bd.Name+`", which only the rukpak manager`)
				}
				got := &v1alpha2.Bundle{}
				if err := suite.client.Get(context.Background(), client.ObjectKeyFromObject(revision), got); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got.Finalizers, revision.Finalizers) || len(got.OwnerReferences) != len(revision.OwnerReferences) {
					t.Fatalf("the victim's Bundle changed: finalizers %v (were %v), owners %v", got.Finalizers, revision.Finalizers, got.OwnerReferences)
				}
			}
		},
	},
)
