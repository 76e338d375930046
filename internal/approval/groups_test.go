//go:build integration

package approval_test

import (
	"context"
	"slices"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/approval"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// A group whose name holds a comma is recorded and re-checked whole: the
// rights of group "team-x,cluster-ops" apply, those of a group
// "cluster-ops" (what splitting at the comma would make of it) do not.
func TestCommaGroup(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "team-x")
	const group = "team-x,cluster-ops"
	user := envtest.UniqueName("lee")
	grant(t, ns, user, editBundleDeployments, useClass, impersonateInstaller)
	grantUse(t, groupSubject(group), "secrets", "team-x-token")
	grantUse(t, groupSubject("cluster-ops"), "secrets", "ops-token")
	lee := as(t, user, group)
	ref := references[4] // http auth secret

	bd := ref.object(false, ns, "team-x-token").(*v1alpha2.BundleDeployment)
	bd.Spec.Paused = true
	if err := lee.Create(ctx, bd); err != nil {
		t.Fatalf("create naming the group's Secret: %v", err)
	}
	defer cleanup(t, bd)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(bd), bd); err != nil {
		t.Fatal(err)
	}
	wantGroups := []string{group, "system:authenticated"}
	if got, want := bd.Annotations[v1alpha2.AnnotationRequestedByGroups], approval.EncodeGroups(wantGroups); got != want {
		t.Fatalf("annotation %s = %q, want %q", v1alpha2.AnnotationRequestedByGroups, got, want)
	}
	if _, got, _ := approval.Requester(bd); !slices.Equal(got, wantGroups) {
		t.Fatalf("Requester() groups = %q, want %q", got, wantGroups)
	}
	c := checker(t)
	c.Uploads = fakeUploads{digest0: {user}} // the spec's upload is the user's own
	if err := c.Check(ctx, bd); err != nil {
		t.Fatalf("Check() = %v, want nil: the group's right to use team-x-token applies", err)
	}

	other := ref.object(false, ns, "ops-token")
	wantDenied(t, lee.Create(ctx, other, client.DryRunAll), useMessage(user, "secrets", "ops-token", ref.field)...)
	bd.Spec.Sources = other.(*v1alpha2.BundleDeployment).Spec.Sources
	wantNotAuthorized(t, c.Check(ctx, bd), useMessage(user, "secrets", "ops-token", ref.field)...)
}
