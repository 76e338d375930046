//go:build integration

package approval_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/approval"
	"github.com/rukpak/rukpak/pkg/envtest"
	"github.com/rukpak/rukpak/pkg/failure"
)

func checker(t *testing.T) *approval.Checker {
	t.Helper()
	return &approval.Checker{Reviews: kube(t).AuthorizationV1().SubjectAccessReviews()}
}

func wantNotAuthorized(t *testing.T, err error, parts ...string) {
	t.Helper()
	f := failure.As(err)
	if f == nil || f.Reason != v1alpha2.ReasonNotAuthorized {
		t.Fatalf("Check() = %v, want a NotAuthorized failure", err)
	}
	wantDenied(t, err, parts...)
}

// carol's BundleDeployment passes the re-check until her permission to
// impersonate the installer is revoked.
func TestCheckRevokedImpersonate(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "team-a")
	bindings := grant(t, ns, "carol", editBundleDeployments, useClass, impersonateInstaller, useManifests)
	bd := newBD(ns, "installer")
	if err := as(t, "carol").Create(ctx, bd); err != nil {
		t.Fatalf("create as carol: %v", err)
	}
	defer cleanup(t, bd)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(bd), bd); err != nil {
		t.Fatal(err)
	}
	c := checker(t)
	if err := c.Check(ctx, bd); err != nil {
		t.Fatalf("Check() = %v, want nil", err)
	}

	if err := env.Client.Delete(ctx, bindings[impersonateInstaller]); err != nil {
		t.Fatal(err)
	}
	var err error
	envtest.Eventually(t, 10*time.Second, func() error {
		if err = c.Check(ctx, bd); err == nil {
			return fmt.Errorf("still allowed")
		}
		return nil
	})
	wantNotAuthorized(t, err, `user "carol"`, "impersonate",
		fmt.Sprintf(`serviceaccounts "installer" in namespace %q`, ns), "grant it with a Role")
}

// The re-check uses the recorded groups and covers the class too.
func TestCheckUseAndGroups(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "team-a")
	grant(t, ns, "erin", impersonateInstaller)
	bd := newBD(ns, "installer")
	bd.Annotations = map[string]string{
		v1alpha2.AnnotationRequestedBy:       "erin",
		v1alpha2.AnnotationRequestedByGroups: "team-a-installers,system:authenticated",
	}
	c := checker(t)
	wantNotAuthorized(t, c.Check(ctx, bd), `user "erin"`, `may not use provisionerclasses "core-rukpak-io-plain"`)

	// A BundleDeployment without serviceAccount needs impersonate on the
	// manager's ServiceAccount, as configured.
	bd.Spec.ServiceAccount = nil
	c.ManagerNamespace, c.ManagerServiceAccount = "ops", "rukpak"
	wantNotAuthorized(t, c.Check(ctx, bd), `may not impersonate serviceaccounts "rukpak" in namespace "ops"`, "it sets no spec.serviceAccount")
}
