//go:build integration

package approval_test

import (
	"context"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/admission"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// patchSpec merge-patches bd's spec as c.
func patchSpec(c client.Client, name, spec string) error {
	bd := &v1alpha2.BundleDeployment{}
	bd.Name = name
	return c.Patch(context.Background(), bd, client.RawPatch(types.MergePatchType, []byte(`{"spec":`+spec+`}`)))
}

// Lowering spec.upgrade.approval (Always → PowerGrowth → Automatic, or
// removing it) is an approval: refused at admission unless the user may
// approve the BundleDeployment. Raising it, and other changes of the spec,
// need nothing more.
func TestAdmissionApprovalLowering(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "team-a")
	bd := newBD(ns, "installer")
	bd.Spec.Upgrade = &v1alpha2.UpgradePolicy{ApprovalPolicy: v1alpha2.ApprovalPowerGrowth}
	if err := env.Client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cleanup(t, bd) })
	user := envtest.UniqueName("requester")
	grant(t, ns, user, editBundleDeployments, useClass, impersonateInstaller, useManifests)
	requester := as(t, user, "team-a")

	refused := func(t *testing.T, spec, from, to string) {
		t.Helper()
		err := patchSpec(requester, bd.Name, spec)
		if !apierrors.IsForbidden(err) {
			t.Fatalf("%s as the requester = %v, want Forbidden", spec, err)
		}
		wantDenied(t, err, admission.LoweringPolicyName,
			fmt.Sprintf("lowering spec.upgrade.approval from %s to %s is an approval", from, to),
			fmt.Sprintf(`user %q may not approve revisions of BundleDeployment %q`, user, bd.Name))
	}
	refused(t, `{"upgrade":{"approval":"Automatic"}}`, "PowerGrowth", "Automatic")
	refused(t, `{"upgrade":null}`, "PowerGrowth", "Automatic")
	refused(t, `{"upgrade":{"approval":null}}`, "PowerGrowth", "Automatic")
	// Raising is no approval; lowering again is.
	if err := patchSpec(requester, bd.Name, `{"upgrade":{"approval":"Always"}}`); err != nil {
		t.Fatalf("raising the policy: %v", err)
	}
	refused(t, `{"upgrade":{"approval":"PowerGrowth"}}`, "Always", "PowerGrowth")
	// Another change of the spec is not a lowering.
	if err := patchSpec(requester, bd.Name, `{"paused":true}`); err != nil {
		t.Fatalf("pausing: %v", err)
	}

	// An approver may lower it, and admission records them as the one
	// who last changed the spec, which the manager re-checks.
	grantApprove(t, user, bd.Name)
	if err := patchSpec(requester, bd.Name, `{"upgrade":{"approval":"Automatic"}}`); err != nil {
		t.Fatalf("lowering as an approver: %v", err)
	}
	if got := annotations(t, bd.Name)[v1alpha2.AnnotationRequestedBy]; got != user {
		t.Errorf("%s = %q, want %q", v1alpha2.AnnotationRequestedBy, got, user)
	}
}
