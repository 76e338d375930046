//go:build integration

package bundledeployment_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/admission"
	"github.com/rukpak/rukpak/internal/controller/bundledeployment"
	"github.com/rukpak/rukpak/internal/ownership"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// TestApprovalBindsToDigestNotName: revisions R and M of one
// BundleDeployment are given the same name (a forged collision of the
// name's 40 bits). R, which grows a little, is approved and installed; a
// revision that grows nothing follows and the history limit drops R's
// Bundle; M, which grows more, takes R's name. The approval of R names R's
// digest, so M waits for its own approval; approved, it is installed.
func TestApprovalBindsToDigestNotName(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "collide")
	role := envtest.UniqueName("collide-role")
	t.Cleanup(func() { _ = env.Client.Delete(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}}) })
	cmR := manifests(t, gatedRBAC(role, "r", "configmaps", "pods"))
	cmM := manifests(t, gatedRBAC(role, "m", "configmaps", "pods", "secrets"))
	name := envtest.UniqueName("bd")
	shared := name + "-c0111de5ed"
	restore := bundledeployment.ForgeRevisionNames(func(bdName string, spec v1alpha2.BundleSpec, valuesDigest string) string {
		if bdName == name && len(spec.Sources) == 1 && len(spec.Sources[0].ConfigMaps) == 1 {
			if cm := spec.Sources[0].ConfigMaps[0].ConfigMap.Name; cm == cmR || cm == cmM {
				return shared
			}
		}
		return ownership.RevisionName(bdName, spec, valuesDigest)
	})
	t.Cleanup(restore)

	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     ns,
			Sources:              source(manifests(t, gatedRBAC(role, "v0", "configmaps"))),
			Upgrade:              &v1alpha2.UpgradePolicy{ApprovalPolicy: v1alpha2.ApprovalPowerGrowth},
			RevisionHistoryLimit: ptr.To[int32](0),
		},
	}
	if err := env.Client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteAndWait(t, bd.Name) })
	bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	rev0 := bd.Status.ActiveBundle

	// R grows (pods): held, approved by its digest, installed.
	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) { b.Spec.Sources = source(cmR) })
	bd = waitAwaiting(t, bd.Name, rev0)
	if bd.Status.Review.Revision != shared || !strings.HasPrefix(bd.Status.Review.Digest, "sha256:") {
		t.Fatalf("status.review = %+v, want revision %s with a digest", bd.Status.Review, shared)
	}
	digestR := bd.Status.Review.Digest
	approver := grantApprover(t, bd.Name)
	approveAs(t, approver, bd.Name, digestR)
	bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	if bd.Status.ActiveBundle != shared {
		t.Fatalf("active %s after approving R, want %s", bd.Status.ActiveBundle, shared)
	}

	// A revision that grows nothing; R's Bundle is dropped (limit 0).
	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) {
		b.Spec.Sources = source(manifests(t, gatedRBAC(role, "t", "configmaps", "pods")))
	})
	envtest.Eventually(t, 30*time.Second, func() error {
		bd = getBD(t, bd.Name)
		if bd.Status.ActiveBundle == shared || bd.Status.ActiveBundle == "" {
			return fmt.Errorf("active %q, want the revision after R", bd.Status.ActiveBundle)
		}
		err := env.Client.Get(ctx, client.ObjectKey{Name: shared}, &v1alpha2.Bundle{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("Bundle %s still there (%v)", shared, err)
		}
		return nil
	})
	revT := bd.Status.ActiveBundle

	// M takes R's name, and R's approval is still in the annotations.
	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) {
		b.Spec.Sources = source(cmM)
		b.Annotations[v1alpha2.AnnotationApproveRevision] = digestR
	})
	bd = waitAwaiting(t, bd.Name, revT)
	if r := bd.Status.Review; r.Revision != shared || r.Digest == digestR || r.Digest == "" {
		t.Fatalf("status.review = %+v: want M under R's name %s with a digest of its own", r, shared)
	}
	if bd.Status.ActiveBundle != revT || slices.Contains(roleResources(t, role), "secrets") {
		t.Fatalf("M was applied on R's approval: active %s, rules %v", bd.Status.ActiveBundle, roleResources(t, role))
	}
	if got := bd.Annotations[v1alpha2.AnnotationApproveRevision]; got != digestR {
		t.Fatalf("%s = %q, want R's approval %s still there", v1alpha2.AnnotationApproveRevision, got, digestR)
	}

	// Approved by its own digest, M is installed.
	approveAs(t, approver, bd.Name, bd.Status.Review.Digest)
	bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	if bd.Status.ActiveBundle != shared || !slices.Contains(roleResources(t, role), "secrets") {
		t.Fatalf("after approving M: active %s, rules %v", bd.Status.ActiveBundle, roleResources(t, role))
	}
}

// grantRequester lets a new user write BundleDeployment name's spec as a
// requester may (docs/security.md): patch it, use the plain class and
// the ConfigMaps cms, impersonate the manager's ServiceAccount (the suite
// installs as the manager) — and not approve it.
func grantRequester(t *testing.T, name string, cms ...string) string {
	t.Helper()
	ctx := context.Background()
	user := envtest.UniqueName("requester")
	subjects := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}
	objs := []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{"bundledeployments"}, ResourceNames: []string{name}, Verbs: []string{"get", "patch", "update"}},
			{APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{"provisionerclasses"}, ResourceNames: []string{v1alpha2.ClassPlain}, Verbs: []string{"use"}},
		}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user}, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: v1alpha2.SystemNamespace}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, ResourceNames: []string{"rukpak-manager"}, Verbs: []string{"impersonate"}},
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: cms, Verbs: []string{"use"}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: v1alpha2.SystemNamespace}, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user}},
	}
	for _, obj := range objs {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	}
	kube, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 10*time.Second, func() error {
		res, err := kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "serviceaccounts", Namespace: v1alpha2.SystemNamespace, Name: "rukpak-manager"},
		}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if !res.Status.Allowed {
			return fmt.Errorf("%s may not impersonate the manager yet", user)
		}
		return nil
	})
	return user
}

// withoutLoweringPolicy removes the binding of the admission policy that
// refuses lowering spec.upgrade.approval to non-approvers, as a cluster
// whose policies are missing, until the test ends.
func withoutLoweringPolicy(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: admission.LoweringPolicyName}}
	if err := env.Client.Delete(ctx, binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := admission.ApplyPolicies(context.Background(), env.Config); err != nil {
			t.Errorf("restoring the admission policies: %v", err)
		}
	})
}

// installedUnderPowerGrowth creates a plain BundleDeployment under
// spec.upgrade.approval PowerGrowth whose content (ConfigMap cm1) grants
// ClusterRole role configmaps, waits until it is installed and returns it;
// cm2 is the content of an upgrade that grants secrets too, a growth of
// power.
func installedUnderPowerGrowth(t *testing.T, prefix string) (bd *v1alpha2.BundleDeployment, role, cm1, cm2 string) {
	t.Helper()
	ctx := context.Background()
	ns := env.Namespace(t, prefix)
	role = envtest.UniqueName(prefix + "-role")
	t.Cleanup(func() { _ = env.Client.Delete(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}}) })
	cm1 = manifests(t, gatedRBAC(role, "v1", "configmaps"))
	cm2 = manifests(t, gatedRBAC(role, "v2", "configmaps", "secrets"))
	bd = &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("bd")},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     ns,
			Sources:              source(cm1),
			Upgrade:              &v1alpha2.UpgradePolicy{ApprovalPolicy: v1alpha2.ApprovalPowerGrowth},
		},
	}
	if err := env.Client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteAndWait(t, bd.Name) })
	return waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled), role, cm1, cm2
}

// TestApprovalLoweredByRequesterKeepsHeld: a revision held under
// PowerGrowth stays held when a requester who may not approve lowers the
// policy to Automatic — re-checked by the manager, here with the
// admission policy that refuses the lowering missing — and the Installed
// message says why; an approval of its digest lets it through.
func TestApprovalLoweredByRequesterKeepsHeld(t *testing.T) {
	ctx := context.Background()
	bd, role, cm1, cm2 := installedUnderPowerGrowth(t, "lowered")
	rev1 := bd.Status.ActiveBundle
	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) { b.Spec.Sources = source(cm2) })
	bd = waitAwaiting(t, bd.Name, rev1)
	digest2 := bd.Status.Review.Digest

	requester := grantRequester(t, bd.Name, cm1, cm2)
	withoutLoweringPolicy(t)
	lower := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"upgrade":{"approval":"Automatic"}}}`))
	envtest.Eventually(t, 10*time.Second, func() error {
		return clientAs(t, requester).Patch(ctx, &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: bd.Name}}, lower)
	})
	want := "spec.upgrade.approval was lowered by user"
	envtest.Eventually(t, 30*time.Second, func() error {
		bd = getBD(t, bd.Name)
		c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled)
		if c == nil || c.Reason != v1alpha2.ReasonAwaitingApproval || c.ObservedGeneration != bd.Generation || !strings.Contains(c.Message, want) {
			return fmt.Errorf("Installed = %+v, want AwaitingApproval for generation %d saying %q", c, bd.Generation, want)
		}
		return nil
	})
	if bd.Annotations[v1alpha2.AnnotationRequestedBy] != requester || bd.Spec.Upgrade.Approval() != v1alpha2.ApprovalAutomatic {
		t.Fatalf("requested-by %q, policy %s: want the requester's lowering", bd.Annotations[v1alpha2.AnnotationRequestedBy], bd.Spec.Upgrade.Approval())
	}
	if bd.Status.ActiveBundle != rev1 || slices.Contains(roleResources(t, role), "secrets") || bd.Status.Review.Digest != digest2 {
		t.Fatalf("the lowering let the held revision through: active %s, rules %v, review %+v", bd.Status.ActiveBundle, roleResources(t, role), bd.Status.Review)
	}
	if bd.Status.ApprovalPolicy != v1alpha2.ApprovalPowerGrowth {
		t.Errorf("status.approvalPolicy %q, want PowerGrowth in force", bd.Status.ApprovalPolicy)
	}

	approveAs(t, grantApprover(t, bd.Name), bd.Name, digest2)
	bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	if !slices.Contains(roleResources(t, role), "secrets") {
		t.Fatalf("after approval: rules %v", roleResources(t, role))
	}
}

// TestApprovalLoweredWithAChangeStaysInForce: with the admission policy
// that refuses lowerings gone, a requester who may not approve lowers
// spec.upgrade.approval and changes the content in the same patch, while
// nothing is held: the policy before stays in force (status.approvalPolicy)
// and the new revision, which grows power, is held for approval.
func TestApprovalLoweredWithAChangeStaysInForce(t *testing.T) {
	ctx := context.Background()
	bd, role, cm1, cm2 := installedUnderPowerGrowth(t, "lowered-change")
	if bd.Status.ApprovalPolicy != v1alpha2.ApprovalPowerGrowth {
		t.Fatalf("status.approvalPolicy %q after install, want PowerGrowth", bd.Status.ApprovalPolicy)
	}
	rev1 := bd.Status.ActiveBundle

	requester := grantRequester(t, bd.Name, cm1, cm2)
	withoutLoweringPolicy(t)
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(
		`{"spec":{"upgrade":{"approval":"Automatic"},"sources":[{"type":"configMaps","configMaps":[{"configMap":{"name":%q},"path":"manifests"}]}]}}`, cm2)))
	envtest.Eventually(t, 10*time.Second, func() error {
		return clientAs(t, requester).Patch(ctx, &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: bd.Name}}, patch)
	})
	bd = waitAwaiting(t, bd.Name, rev1)
	c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled)
	if want := fmt.Sprintf("spec.upgrade.approval was lowered by user %q", requester); !strings.Contains(c.Message, want) {
		t.Errorf("Installed message %q does not say %q", c.Message, want)
	}
	if bd.Status.ApprovalPolicy != v1alpha2.ApprovalPowerGrowth || bd.Spec.Upgrade.Approval() != v1alpha2.ApprovalAutomatic {
		t.Errorf("status.approvalPolicy %q with spec %s: want PowerGrowth in force", bd.Status.ApprovalPolicy, bd.Spec.Upgrade.Approval())
	}
	if bd.Status.ActiveBundle != rev1 || slices.Contains(roleResources(t, role), "secrets") {
		t.Fatalf("the lowering let the new revision through: active %s, rules %v", bd.Status.ActiveBundle, roleResources(t, role))
	}

	approveAs(t, grantApprover(t, bd.Name), bd.Name, bd.Status.Review.Digest)
	waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	if !slices.Contains(roleResources(t, role), "secrets") {
		t.Fatalf("after approval: rules %v", roleResources(t, role))
	}
}

// TestApprovalFloorOfClass: a ProvisionerClass's spec.minimumApproval
// holds a BundleDeployment that asks for nothing: its power-growing
// upgrade waits for approval.
func TestApprovalFloorOfClass(t *testing.T) {
	ctx := context.Background()
	class := &v1alpha2.ProvisionerClass{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: v1alpha2.ClassPlain}, class); err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t, "floor")
	role := envtest.UniqueName("floor-role")
	t.Cleanup(func() { _ = env.Client.Delete(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}}) })
	bd := newBD(t, ns, manifests(t, gatedRBAC(role, "v1", "configmaps")))
	t.Cleanup(func() { deleteAndWait(t, bd.Name) })
	bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	rev1 := bd.Status.ActiveBundle

	setFloor := func(p v1alpha2.ApprovalPolicy) {
		patch := fmt.Sprintf(`{"spec":{"minimumApproval":%q}}`, p)
		if p == "" {
			patch = `{"spec":{"minimumApproval":null}}`
		}
		if err := env.Client.Patch(ctx, &v1alpha2.ProvisionerClass{ObjectMeta: metav1.ObjectMeta{Name: v1alpha2.ClassPlain}}, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			t.Fatal(err)
		}
	}
	setFloor(v1alpha2.ApprovalPowerGrowth)
	t.Cleanup(func() { setFloor(class.Spec.MinimumApproval) })

	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) {
		b.Spec.Sources = source(manifests(t, gatedRBAC(role, "v2", "configmaps", "secrets")))
	})
	bd = waitAwaiting(t, bd.Name, rev1)
	if c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled); !strings.Contains(c.Message, "spec.upgrade.approval PowerGrowth") {
		t.Errorf("Installed message %q does not name the policy in force", c.Message)
	}
	if bd.Status.ActiveBundle != rev1 || slices.Contains(roleResources(t, role), "secrets") {
		t.Fatalf("the floor did not hold the upgrade: active %s, rules %v", bd.Status.ActiveBundle, roleResources(t, role))
	}
}
