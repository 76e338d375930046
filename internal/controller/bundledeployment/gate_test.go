package bundledeployment_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// gatedRBAC is a plain bundle of a ConfigMap, a ClusterRole with rules of
// the given resources (verb get) and a binding of it to a user.
func gatedRBAC(role, value string, resources ...string) map[string]string {
	rules := ""
	for _, r := range resources {
		rules += fmt.Sprintf("- apiGroups: [\"\"]\n  resources: [%q]\n  verbs: [\"get\"]\n", r)
	}
	return map[string]string{
		"a.yaml": cmYAML("keep", value),
		"b.yaml": fmt.Sprintf("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: %s\nrules:\n%s", role, rules),
		"c.yaml": fmt.Sprintf("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: %s\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: %s\nsubjects:\n- apiGroup: rbac.authorization.k8s.io\n  kind: User\n  name: gate-user\n", role, role),
	}
}

func roleResources(t *testing.T, name string) []string {
	t.Helper()
	cr := &rbacv1.ClusterRole{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, cr); err != nil {
		t.Fatalf("getting ClusterRole %s: %v", name, err)
	}
	var out []string
	for _, r := range cr.Rules {
		out = append(out, r.Resources...)
	}
	return out
}

// waitAwaiting waits until the newest revision awaits approval and
// returns the BundleDeployment.
func waitAwaiting(t *testing.T, name, previous string) *v1alpha2.BundleDeployment {
	t.Helper()
	bd := &v1alpha2.BundleDeployment{}
	envtest.Eventually(t, 30*time.Second, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
			return err
		}
		c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled)
		if c == nil || c.Reason != v1alpha2.ReasonAwaitingApproval || c.ObservedGeneration != bd.Generation {
			return fmt.Errorf("Installed = %+v, want AwaitingApproval", c)
		}
		if bd.Status.Review == nil || bd.Status.Review.Approved || bd.Status.Review.Revision == previous {
			return fmt.Errorf("status.review = %+v, want an unapproved review of a revision after %s", bd.Status.Review, previous)
		}
		return nil
	})
	return bd
}

// TestApprovalGatePowerGrowth: under spec.upgrade.approval PowerGrowth an
// upgrade that adds a ClusterRole rule waits, writes nothing, keeps the
// installed revision drift-corrected and shows the new rule in
// status.review; approving it installs it; an upgrade that grows nothing
// is installed without approval; and the approval of one revision does not
// let a later one through.
func TestApprovalGatePowerGrowth(t *testing.T) {
	ctx := context.Background()
	ns := envtest.UniqueName("gate")
	role := envtest.UniqueName("gate-role")
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("bd")},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     ns,
			Sources:              source(manifests(t, gatedRBAC(role, "v1", "configmaps"))),
			Upgrade:              &v1alpha2.UpgradePolicy{ApprovalPolicy: v1alpha2.ApprovalPowerGrowth},
		},
	}
	if err := env.Client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteAndWait(t, bd.Name) })

	// A first install is not held by PowerGrowth, but reviewed.
	bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	rev1 := bd.Status.ActiveBundle
	if r := bd.Status.Review; r == nil || r.Revision != rev1 || !r.Approved || r.ActiveRevision != "" {
		t.Fatalf("status.review after the first install = %+v, want an approved review of %s", r, rev1)
	}

	// An upgrade that grants secrets waits.
	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) {
		b.Spec.Sources = source(manifests(t, gatedRBAC(role, "v2", "configmaps", "secrets")))
	})
	bd = waitAwaiting(t, bd.Name, rev1)
	rev2 := bd.Status.Review.Revision
	msg := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled).Message
	for _, want := range []string{"rukpakctl approve " + bd.Name, rev1 + " remains installed"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Installed message %q does not contain %q", msg, want)
		}
	}
	if c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeReady); c == nil || c.Reason != v1alpha2.ReasonAwaitingApproval {
		t.Errorf("Ready = %+v, want reason AwaitingApproval", c)
	}
	r := bd.Status.Review
	if !r.Review.GrowsPower || r.ActiveRevision != rev1 {
		t.Errorf("status.review = %+v, want growsPower compared with %s", r, rev1)
	}
	if !slices.ContainsFunc(r.Review.RBAC.Gained, func(g v1alpha2.ReviewGrant) bool {
		return g.Subject.Name == "gate-user" && slices.Contains(g.Rule.Resources, "secrets")
	}) {
		t.Errorf("status.review.rbac.gained = %+v, want gate-user gaining secrets", r.Review.RBAC.Gained)
	}
	if bd.Status.ActiveBundle != rev1 || slices.Contains(roleResources(t, role), "secrets") {
		t.Fatalf("the held revision was applied: active %s, rules %v", bd.Status.ActiveBundle, roleResources(t, role))
	}
	// The installed revision is still drift-corrected.
	if err := env.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "keep"}}); err != nil {
		t.Fatal(err)
	}
	waitValue(t, ns, "keep", "v1")

	// The admin approves: the admission policy records who.
	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) {
		metav1.SetMetaDataAnnotation(&b.ObjectMeta, v1alpha2.AnnotationApproveRevision, rev2)
	})
	bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	if bd.Status.ActiveBundle != rev2 || !slices.Contains(roleResources(t, role), "secrets") {
		t.Fatalf("after approval: active %s (want %s), rules %v", bd.Status.ActiveBundle, rev2, roleResources(t, role))
	}
	if bd.Annotations[v1alpha2.AnnotationApprovedBy] == "" {
		t.Errorf("no %s annotation: the admission policy did not record the approver", v1alpha2.AnnotationApprovedBy)
	}
	if r := bd.Status.Review; r == nil || r.Revision != rev2 || !r.Approved || r.ApprovedBy == "" {
		t.Errorf("status.review after approval = %+v, want %s approved by someone", r, rev2)
	}
	waitValue(t, ns, "keep", "v2")

	// An upgrade that grows nothing needs no approval.
	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) {
		b.Spec.Sources = source(manifests(t, gatedRBAC(role, "v3", "configmaps", "secrets")))
	})
	envtest.Eventually(t, 30*time.Second, func() error {
		bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
		if bd.Status.ActiveBundle == rev2 {
			return fmt.Errorf("still %s active", rev2)
		}
		return nil
	})
	rev3 := bd.Status.ActiveBundle
	if r := bd.Status.Review; r == nil || r.Revision != rev3 || r.Review.GrowsPower || !r.Approved {
		t.Errorf("status.review of the upgrade that grows nothing = %+v", r)
	}
	waitValue(t, ns, "keep", "v3")

	// The approval of rev2 does not let a later revision that grows
	// through.
	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) {
		b.Spec.Sources = source(manifests(t, gatedRBAC(role, "v4", "configmaps", "secrets", "pods")))
	})
	bd = waitAwaiting(t, bd.Name, rev3)
	if bd.Status.ActiveBundle != rev3 || slices.Contains(roleResources(t, role), "pods") {
		t.Fatalf("revision %s was applied on the approval of %s", bd.Status.Review.Revision, rev2)
	}
}
