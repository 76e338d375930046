//go:build integration

package approval_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/config"
	"github.com/rukpak/rukpak/internal/admission"
	"github.com/rukpak/rukpak/internal/controller/provisionerclass"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// alice may create BundleDeployments and use the class, but not impersonate
// the installer ServiceAccount.
func TestAdmissionDeniesWithoutImpersonate(t *testing.T) {
	ns := env.Namespace(t, "team-a")
	grant(t, ns, "alice", editBundleDeployments, useClass)
	err := as(t, "alice").Create(context.Background(), newBD(ns, "installer"))
	if !apierrors.IsForbidden(err) {
		t.Fatalf("create = %v, want Forbidden", err)
	}
	wantDenied(t, err, admission.ValidatingPolicyName, `user "alice" may not impersonate`,
		fmt.Sprintf(`serviceaccounts "installer" in namespace %q`, ns), "team-a",
		fmt.Sprintf(`grant it with a Role in namespace %q allowing verb "impersonate" on serviceaccounts with resourceNames ["installer"]`, ns))
}

// bob may impersonate the installer but not use the class.
func TestAdmissionDeniesWithoutUse(t *testing.T) {
	ns := env.Namespace(t, "team-a")
	grant(t, ns, "bob", editBundleDeployments, impersonateInstaller)
	err := as(t, "bob").Create(context.Background(), newBD(ns, "installer"))
	if !apierrors.IsForbidden(err) {
		t.Fatalf("create = %v, want Forbidden", err)
	}
	wantDenied(t, err, admission.ValidatingPolicyName, `user "bob" may not use provisionerclasses "core-rukpak-io-plain"`,
		`grant it with a ClusterRole allowing verb "use" on provisionerclasses`)
}

// A BundleDeployment without serviceAccount installs as the manager, so its
// author needs impersonate on rukpak-system/rukpak-manager.
func TestAdmissionManagerIdentity(t *testing.T) {
	ns := env.Namespace(t, "team-a")
	// A user of this run only: the grant on the manager is in
	// rukpak-system, which outlives the test.
	user := envtest.UniqueName("dave")
	grant(t, ns, user, editBundleDeployments, useClass)
	dave := as(t, user)
	err := dave.Create(context.Background(), newBD(ns, ""))
	wantDenied(t, err, fmt.Sprintf(`user %q may not impersonate serviceaccounts "rukpak-manager" in namespace "rukpak-system"`, user),
		"it sets no spec.serviceAccount", "or set spec.serviceAccount")

	grant(t, ns, user, impersonateManager, useManifests)
	if err := dave.Create(context.Background(), newBD(ns, "")); err != nil {
		t.Fatalf("create with impersonate on the manager: %v", err)
	}
}

// carol has every permission: her BundleDeployment is admitted and records
// her; a forged requester is replaced by the real one; updates that change
// neither the spec nor the annotations are not checked and keep them.
func TestAdmissionRecordsRequester(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "team-a")
	grant(t, ns, "carol", editBundleDeployments, useClass, impersonateInstaller, useManifests)
	carol := as(t, "carol", "team-a-installers")
	wantCarol := map[string]string{
		v1alpha2.AnnotationRequestedBy:       "carol",
		v1alpha2.AnnotationRequestedByGroups: "team-a-installers,system:authenticated",
	}
	checkCarol := func(step, name string) {
		t.Helper()
		got := annotations(t, name)
		for k, v := range wantCarol {
			if got[k] != v {
				t.Errorf("%s: annotation %s = %q, want %q", step, k, got[k], v)
			}
		}
	}

	// Created with a forged requester: the policy writes the real one.
	bd := newBD(ns, "installer")
	bd.Annotations = map[string]string{v1alpha2.AnnotationRequestedBy: "admin", v1alpha2.AnnotationRequestedByGroups: "system:masters"}
	if err := carol.Create(ctx, bd); err != nil {
		t.Fatalf("create as carol: %v", err)
	}
	checkCarol("create", bd.Name)

	// carol claims to be the admin in an update: overwritten, not refused.
	if err := carol.Get(ctx, client.ObjectKeyFromObject(bd), bd); err != nil {
		t.Fatal(err)
	}
	bd.Annotations[v1alpha2.AnnotationRequestedBy] = "admin"
	bd.Annotations[v1alpha2.AnnotationRequestedByGroups] = "system:masters"
	if err := carol.Update(ctx, bd); err != nil {
		t.Fatalf("update as carol: %v", err)
	}
	checkCarol("forged update", bd.Name)

	// The admin (the manager, in a real cluster) adds a finalizer and a
	// label: not a spec change, so carol stays the requester.
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(bd), bd); err != nil {
		t.Fatal(err)
	}
	bd.Finalizers = append(bd.Finalizers, v1alpha2.FinalizerCleanup)
	bd.Labels = map[string]string{"team": "a"}
	if err := env.Client.Update(ctx, bd); err != nil {
		t.Fatalf("update as admin: %v", err)
	}
	checkCarol("finalizer update", bd.Name)

	// alice may edit BundleDeployments but not impersonate the installer:
	// she may label carol's BundleDeployment but not change its spec.
	grant(t, ns, "alice", editBundleDeployments, useClass)
	alice := as(t, "alice")
	if err := alice.Get(ctx, client.ObjectKeyFromObject(bd), bd); err != nil {
		t.Fatal(err)
	}
	bd.Labels["reviewed-by"] = "alice"
	if err := alice.Update(ctx, bd); err != nil {
		t.Fatalf("label update as alice: %v", err)
	}
	checkCarol("label update by alice", bd.Name)
	bd.Spec.Paused = true
	wantDenied(t, alice.Update(ctx, bd), `user "alice" may not impersonate`)

	// Finally the admin changes the spec and becomes the requester.
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(bd), bd); err != nil {
		t.Fatal(err)
	}
	bd.Spec.Paused = true
	if err := env.Client.Update(ctx, bd); err != nil {
		t.Fatalf("spec update as admin: %v", err)
	}
	if got := annotations(t, bd.Name)[v1alpha2.AnnotationRequestedBy]; got == "carol" || got == "" {
		t.Errorf("after the admin's spec change requested-by = %q, want the admin", got)
	}
	cleanup(t, bd)
}

// Sources may name Secrets and ConfigMaps only in rukpak-system (a rule of
// the CRD schema).
func TestSourcesOnlyFromSystemNamespace(t *testing.T) {
	for _, tt := range []struct {
		namespace string
		refused   bool
	}{
		{"team-a", true},
		{v1alpha2.SystemNamespace, false},
		{"", false},
	} {
		t.Run(fmt.Sprintf("namespace %q", tt.namespace), func(t *testing.T) {
			bd := newBD("team-a", "")
			bd.Spec.Sources = []v1alpha2.BundleSource{{
				Type: v1alpha2.SourceTypeImage,
				Image: &v1alpha2.ImageSource{
					Ref:        "registry.example/hello@sha256:" + fmt.Sprintf("%064d", 0),
					PullSecret: &v1alpha2.LocalObjectReference{Name: "pull", Namespace: tt.namespace},
				},
			}}
			err := env.Client.Create(context.Background(), bd, client.DryRunAll)
			if !tt.refused {
				if err != nil {
					t.Fatalf("create: %v", err)
				}
				return
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("create = %v, want Invalid", err)
			}
			wantDenied(t, err, "sources read Secrets and ConfigMaps only from rukpak-system")
		})
	}
}

// Without the mutating policy a user cannot name someone else: the
// validating policy requires the annotations to name the requester. The
// test removes the mutating binding and restores it with InstallPolicies.
func TestAdmissionWithoutMutatingPolicy(t *testing.T) {
	ctx := context.Background()
	policies, err := config.Policies()
	if err != nil {
		t.Fatal(err)
	}
	binding := policies[1]
	if err := env.Client.Delete(ctx, binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := admission.InstallPolicies(context.Background(), env.Config); err != nil {
			t.Fatalf("restoring the policies: %v", err)
		}
	})

	bd := newBD("team-a", "")
	bd.Annotations = map[string]string{v1alpha2.AnnotationRequestedBy: "someone-else"}
	var last error
	envtest.Eventually(t, 30*time.Second, func() error {
		last = env.Client.Create(ctx, bd.DeepCopy(), client.DryRunAll)
		if last == nil {
			return fmt.Errorf("admitted: the mutating policy still rewrites the annotation")
		}
		return nil
	})
	wantDenied(t, last, admission.ValidatingPolicyName, "must name the requesting user", `not "someone-else"`,
		admission.MutatingPolicyName)
}

func cleanup(t *testing.T, bd *v1alpha2.BundleDeployment) {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(bd), bd); err != nil {
		return
	}
	bd.Finalizers = nil
	_ = env.Client.Update(ctx, bd)
	_ = env.Client.Delete(ctx, bd)
}

// New BundleDeployments of the built-in classes get the cleanup finalizer
// from rukpak-cleanup-finalizer, next to any of their own; those of other
// classes, and updates, are left as they are.
func TestAdmissionAddsCleanupFinalizer(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "team-a")
	type finalizerCase struct {
		name  string
		class string
		own   []string
		want  []string
	}
	tests := []finalizerCase{
		{"plain", v1alpha2.ClassPlain, nil, []string{v1alpha2.FinalizerCleanup}},
		{"helm, with a finalizer of its own", v1alpha2.ClassHelm, []string{"example.com/keep"}, []string{"example.com/keep", v1alpha2.FinalizerCleanup}},
		{"registry, with the finalizer already", v1alpha2.ClassRegistry, []string{v1alpha2.FinalizerCleanup}, []string{v1alpha2.FinalizerCleanup}},
		{"another provisioner's class", "example-com-other", []string{"example.com/keep"}, []string{"example.com/keep"}},
	}
	// The policy names the built-in classes: each of them, whatever is
	// added later, must get the finalizer.
	for _, pc := range provisionerclass.Builtin {
		tests = append(tests, finalizerCase{"built-in class " + pc.Name, pc.Name, nil, []string{v1alpha2.FinalizerCleanup}})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bd := newBD(ns, "")
			bd.Spec.ProvisionerClassName = tc.class
			bd.Finalizers = tc.own
			if err := env.Client.Create(ctx, bd); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				bd.Finalizers = nil
				_ = env.Client.Update(ctx, bd)
				_ = env.Client.Delete(ctx, bd)
			})
			if !slices.Equal(bd.Finalizers, tc.want) {
				t.Fatalf("finalizers after create = %v, want %v", bd.Finalizers, tc.want)
			}
			// An update that drops it is not undone: only creates are
			// mutated, and the manager owns the finalizer from then on.
			bd.Finalizers = slices.DeleteFunc(bd.Finalizers, func(f string) bool { return f == v1alpha2.FinalizerCleanup })
			if err := env.Client.Update(ctx, bd); err != nil {
				t.Fatal(err)
			}
			if slices.Contains(bd.Finalizers, v1alpha2.FinalizerCleanup) {
				t.Fatalf("finalizers after an update without it = %v", bd.Finalizers)
			}
		})
	}
}

// The release manager's own Bundle writes (its revisions) are matched by
// no policy: it records itself as their requester, and what it writes is
// kept, though it was granted no use of the class or the ConfigMaps (it
// writes Bundles only for BundleDeployments whose requester was checked).
// Anyone else who writes the manager's name as a Bundle's requester is
// recorded as themselves.
func TestAdmissionManagersOwnBundles(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "team-a")
	const manager = "system:serviceaccount:rukpak-system:rukpak-manager"
	grant(t, ns, manager, createBundles)
	mallory := envtest.UniqueName("mallory")
	grant(t, ns, mallory, createBundles, useClass, useManifests)
	claimsManager := map[string]string{
		v1alpha2.AnnotationRequestedBy:       manager,
		v1alpha2.AnnotationRequestedByGroups: "written-by-the-manager",
	}
	create := func(c client.Client) *v1alpha2.Bundle {
		t.Helper()
		b := &v1alpha2.Bundle{
			ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("revision"), Annotations: maps.Clone(claimsManager)},
			Spec:       v1alpha2.BundleSpec{ProvisionerClassName: v1alpha2.ClassPlain, Sources: newBD(ns, "").Spec.Sources},
		}
		if err := c.Create(ctx, b); err != nil {
			t.Fatalf("create Bundle: %v", err)
		}
		t.Cleanup(func() {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(b), b); err == nil {
				b.Finalizers = nil
				_ = env.Client.Update(ctx, b)
				_ = env.Client.Delete(ctx, b)
			}
		})
		got := &v1alpha2.Bundle{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(b), got); err != nil {
			t.Fatal(err)
		}
		return got
	}

	got := create(as(t, manager, "system:serviceaccounts", "system:serviceaccounts:rukpak-system"))
	for k, v := range claimsManager {
		if got.Annotations[k] != v {
			t.Errorf("the manager's Bundle: annotation %s = %q, want %q as the manager wrote it", k, got.Annotations[k], v)
		}
	}

	got = create(as(t, mallory))
	if by := got.Annotations[v1alpha2.AnnotationRequestedBy]; by != mallory {
		t.Errorf("a Bundle %s wrote claiming to be the manager: requested-by = %q, want %q", mallory, by, mallory)
	}
	if groups := got.Annotations[v1alpha2.AnnotationRequestedByGroups]; groups != "system:authenticated" {
		t.Errorf("a Bundle %s wrote claiming to be the manager: requested-by-groups = %q, want system:authenticated", mallory, groups)
	}
}
