//go:build integration

package approval_test

import (
	"context"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/admission"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// metadataChange is one update of an object's metadata that decides its
// life (or does not), by one user.
type metadataChange struct {
	name   string
	client func(t *testing.T) client.Client
	mutate func(obj client.Object)
	// want holds the parts of the refusal; nil means admitted.
	want []string
}

// ghostOwner is an owner reference to a cluster-scoped object that does
// not exist: the garbage collector would delete the object.
var ghostOwner = metav1.OwnerReference{APIVersion: "v1", Kind: "Namespace", Name: "gone-for-ever", UID: types.UID("00000000-0000-0000-0000-000000000001")}

func addFinalizer(f string) func(client.Object) {
	return func(obj client.Object) { obj.SetFinalizers(append(obj.GetFinalizers(), f)) }
}

func removeFinalizer(f string) func(client.Object) {
	return func(obj client.Object) {
		obj.SetFinalizers(slices.DeleteFunc(obj.GetFinalizers(), func(x string) bool { return x == f }))
	}
}

func addOwner(obj client.Object) {
	obj.SetOwnerReferences(append(obj.GetOwnerReferences(), ghostOwner))
}

func setAnnotation(k, v string) func(client.Object) {
	return func(obj client.Object) {
		a := obj.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a[k] = v
		obj.SetAnnotations(a)
	}
}

func setLabel(obj client.Object) {
	obj.SetLabels(map[string]string{"reviewed": "yes"})
}

// runMetadataChanges applies each change to a fresh copy of obj (read as
// the admin) with a merge patch as its user, in order, and checks the
// answer.
func runMetadataChanges(t *testing.T, obj client.Object, changes []metadataChange) {
	t.Helper()
	ctx := context.Background()
	for _, tc := range changes {
		t.Run(tc.name, func(t *testing.T) {
			cur := obj.DeepCopyObject().(client.Object)
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
				t.Fatal(err)
			}
			changed := cur.DeepCopyObject().(client.Object)
			tc.mutate(changed)
			err := tc.client(t).Patch(ctx, changed, client.MergeFrom(cur))
			if tc.want == nil {
				if err != nil {
					t.Fatalf("patch = %v, want it admitted", err)
				}
				return
			}
			if !apierrors.IsForbidden(err) {
				t.Fatalf("patch = %v, want Forbidden", err)
			}
			wantDenied(t, err, append([]string{admission.ValidatingPolicyName}, tc.want...)...)
		})
	}
}

// Attack 2 of issue 24: a user who may update BundleDeployments, but not
// act as another team's, plants an owner reference to an object that does
// not exist (the garbage collector deletes the BundleDeployment and rukpak
// uninstalls it), or a finalizer (its delete hangs for ever), or retries
// it. Only users who may create the BundleDeployment as it stands, the
// manager and system:masters may; rukpak's finalizer only the manager and
// system:masters. Labels and other annotations stay free.
func TestAdmissionLifecycleMetadata(t *testing.T) {
	ctx := context.Background()
	nsA, nsB := env.Namespace(t, "team-a"), env.Namespace(t, "team-b")
	carol, mallory := envtest.UniqueName("carol"), envtest.UniqueName("mallory")
	manager := "system:serviceaccount:rukpak-system:rukpak-manager"
	grant(t, nsA, carol, editBundleDeployments, useClass, impersonateInstaller, useManifests)
	grant(t, nsB, mallory, editBundleDeployments, useClass, impersonateInstaller, useManifests)
	grant(t, nsA, manager, editBundleDeployments)
	bd := newBD(nsA, "installer")
	if err := as(t, carol).Create(ctx, bd); err != nil {
		t.Fatalf("create as %s: %v", carol, err)
	}
	t.Cleanup(func() { cleanup(t, bd) })
	if !slices.Contains(bd.Finalizers, v1alpha2.FinalizerCleanup) {
		t.Fatalf("finalizers = %v, want %s", bd.Finalizers, v1alpha2.FinalizerCleanup)
	}

	asUser := func(user string) func(t *testing.T) client.Client {
		return func(t *testing.T) client.Client { return as(t, user) }
	}
	admin := func(*testing.T) client.Client { return env.Client }
	notAs := func(what string) []string {
		return []string{
			`changing ` + what + ` of BundleDeployment "` + bd.Name + `" needs the rights to create it as it stands`,
			`user "` + mallory + `" may not impersonate serviceaccounts "installer" in namespace "` + nsA + `"`,
		}
	}
	rukpakFinalizer := func(user string) []string {
		return []string{
			`user "` + user + `" may not add or remove the finalizer core.rukpak.io/cleanup of BundleDeployment "` + bd.Name + `"`,
			"only by the rukpak manager", "a cluster admin (system:masters) may remove core.rukpak.io/cleanup",
		}
	}
	runMetadataChanges(t, bd, []metadataChange{
		{"another team adds an owner that does not exist", asUser(mallory), addOwner, notAs("metadata.ownerReferences")},
		{"another team plants a finalizer", asUser(mallory), addFinalizer("hostile.example/block"), notAs("metadata.finalizers")},
		{"another team removes rukpak's finalizer", asUser(mallory), removeFinalizer(v1alpha2.FinalizerCleanup), rukpakFinalizer(mallory)},
		{"another team retries it", asUser(mallory), setAnnotation(v1alpha2.AnnotationRetry, "now"), notAs("annotation core.rukpak.io/retry")},
		{"another team labels it", asUser(mallory), setLabel, nil},
		{"another team annotates it", asUser(mallory), setAnnotation("example.com/note", "hi"), nil},
		{"its team adds a finalizer of its own", asUser(carol), addFinalizer("team-a.example/keep"), nil},
		{"its team adds an owner", asUser(carol), addOwner, nil},
		{"its team retries it", asUser(carol), setAnnotation(v1alpha2.AnnotationRetry, "now"), nil},
		{"its team removes rukpak's finalizer", asUser(carol), removeFinalizer(v1alpha2.FinalizerCleanup), rukpakFinalizer(carol)},
		{"its team adds another rukpak finalizer", asUser(carol), addFinalizer("core.rukpak.io/other"), []string{"may not add or remove the finalizer core.rukpak.io/other"}},
		{"the manager removes its finalizer", asUser(manager), removeFinalizer(v1alpha2.FinalizerCleanup), nil},
		{"the manager adds it back", asUser(manager), addFinalizer(v1alpha2.FinalizerCleanup), nil},
		{"an admin removes it", admin, removeFinalizer(v1alpha2.FinalizerCleanup), nil},
	})
	got := &v1alpha2.BundleDeployment{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(bd), got); err != nil {
		t.Fatal(err)
	}
	if got.Annotations[v1alpha2.AnnotationRequestedBy] != carol {
		t.Fatalf("requested-by = %q after metadata changes, want %q (they do not change the requester)", got.Annotations[v1alpha2.AnnotationRequestedBy], carol)
	}
}

// A Bundle the manager wrote for a BundleDeployment (its controller) has
// its owner references and finalizers changed only by the manager and
// system:masters: no one else could create it as it stands. A Bundle a
// user wrote on their own is theirs to change.
func TestAdmissionBundleLifecycleMetadata(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "team-a")
	mallory := envtest.UniqueName("mallory")
	grant(t, ns, mallory, patchBundles, createBundles, useClass, useManifests)
	bd := newBD(ns, "installer")
	if err := env.Client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cleanup(t, bd) })
	newBundle := func(name string) *v1alpha2.Bundle {
		return &v1alpha2.Bundle{
			ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{v1alpha2.FinalizerContent}},
			Spec:       v1alpha2.BundleSpec{ProvisionerClassName: v1alpha2.ClassPlain, Sources: bd.Spec.Sources},
		}
	}
	revision := newBundle(envtest.UniqueName(bd.Name))
	revision.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha2.GroupVersion.String(), Kind: v1alpha2.BundleDeploymentKind,
		Name: bd.Name, UID: bd.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	if err := env.Client.Create(ctx, revision); err != nil {
		t.Fatal(err)
	}
	own := newBundle(envtest.UniqueName("own"))
	own.Finalizers = nil
	if err := as(t, mallory).Create(ctx, own); err != nil {
		t.Fatalf("create a Bundle of its own as %s: %v", mallory, err)
	}
	t.Cleanup(func() {
		for _, b := range []*v1alpha2.Bundle{revision, own} {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(b), b); err == nil {
				b.Finalizers = nil
				_ = env.Client.Update(ctx, b)
				_ = env.Client.Delete(ctx, b)
			}
		}
	})

	asMallory := func(t *testing.T) client.Client { return as(t, mallory) }
	revisionOf := `: it is a revision of BundleDeployment "` + bd.Name + `", which only the rukpak manager`
	runMetadataChanges(t, revision, []metadataChange{
		{"plants a finalizer on another's revision", asMallory, addFinalizer("hostile.example/block"),
			[]string{`user "` + mallory + `" may not change metadata.finalizers of Bundle "` + revision.Name + `"` + revisionOf}},
		{"removes its owner", asMallory, func(obj client.Object) { obj.SetOwnerReferences(nil) },
			[]string{`may not change metadata.ownerReferences of Bundle "` + revision.Name + `"` + revisionOf}},
		{"removes rukpak's finalizer", asMallory, removeFinalizer(v1alpha2.FinalizerContent),
			[]string{`may not add or remove the finalizer core.rukpak.io/content of Bundle "` + revision.Name + `"`}},
		{"labels it", asMallory, setLabel, nil},
		{"an admin plants a finalizer", func(*testing.T) client.Client { return env.Client }, addFinalizer("admin.example/hold"), nil},
	})
	runMetadataChanges(t, own, []metadataChange{
		{"adds a finalizer to its own Bundle", asMallory, addFinalizer("team-a.example/keep"), nil},
		{"adds rukpak's finalizer to its own Bundle", asMallory, addFinalizer(v1alpha2.FinalizerContent),
			[]string{`may not add or remove the finalizer core.rukpak.io/content of Bundle "` + own.Name + `"`}},
	})
}
