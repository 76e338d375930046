//go:build integration

package bundledeployment_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
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
	rev2, digest2 := bd.Status.Review.Revision, bd.Status.Review.Digest
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

	// An approver approves (the manager runs with
	// --require-separate-approver, so not the admin who asked for it):
	// the admission policy records who.
	approveAs(t, grantApprover(t, bd.Name), bd.Name, digest2)
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

// grantApprover creates a user allowed to approve (and get and patch)
// BundleDeployment name, as docs/security.md says to grant it, and
// returns the user's name. The grant is removed when the test ends.
func grantApprover(t *testing.T, name string) string {
	t.Helper()
	ctx := context.Background()
	user := envtest.UniqueName("approver")
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{"bundledeployments"},
		ResourceNames: []string{name}, Verbs: []string{"get", "patch", v1alpha2.VerbApprove},
	}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	for _, obj := range []client.Object{role, binding} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	}
	return user
}

// clientAs is a client of the envtest API server impersonating user.
func clientAs(t *testing.T, user string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// approve sets the approve-revision annotation of BundleDeployment name
// to revision as c's user, and clears approved-by, as rukpakctl approve
// does (so that admission records c's user even when approve-revision
// names the revision already).
func approve(c client.Client, name, revision string) error {
	bd := &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: name}}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q,%q:null,%q:null}}}`,
		v1alpha2.AnnotationApproveRevision, revision, v1alpha2.AnnotationApprovedBy, v1alpha2.AnnotationApprovedByGroups)
	return c.Patch(context.Background(), bd, client.RawPatch(types.MergePatchType, []byte(patch)))
}

// approveAs approves revision of BundleDeployment name as user, once the
// authorizer has seen the user's grant (admission refuses it before).
func approveAs(t *testing.T, user, name, revision string) {
	t.Helper()
	c := clientAs(t, user)
	envtest.Eventually(t, 10*time.Second, func() error { return approve(c, name, revision) })
}

// waitHeld waits until BundleDeployment name holds a revision with
// Installed and Ready False for reason and returns the BundleDeployment.
func waitHeld(t *testing.T, name, reason string) *v1alpha2.BundleDeployment {
	t.Helper()
	bd := &v1alpha2.BundleDeployment{}
	envtest.Eventually(t, 30*time.Second, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
			return err
		}
		for _, typ := range []string{v1alpha2.TypeInstalled, v1alpha2.TypeReady} {
			c := meta.FindStatusCondition(bd.Status.Conditions, typ)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != reason || c.ObservedGeneration != bd.Generation {
				return fmt.Errorf("%s = %+v, want False/%s for generation %d", typ, c, reason, bd.Generation)
			}
		}
		return nil
	})
	return bd
}

// TestApprovalGateAlways: under spec.upgrade.approval Always even the
// first install waits for an approval, writing nothing; approved, it is
// installed; an upgrade that grows nothing waits too, and the approval of
// the first revision does not let it through.
func TestApprovalGateAlways(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "always")
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("bd")},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     ns,
			Sources:              source(manifests(t, map[string]string{"a.yaml": cmYAML("keep", "v1")})),
			Upgrade:              &v1alpha2.UpgradePolicy{ApprovalPolicy: v1alpha2.ApprovalAlways},
		},
	}
	if err := env.Client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteAndWait(t, bd.Name) })

	bd = waitAwaiting(t, bd.Name, "")
	rev1, digest1 := bd.Status.Review.Revision, bd.Status.Review.Digest
	if bd.Status.ActiveBundle != "" || bd.Status.Review.ActiveRevision != "" {
		t.Fatalf("active %q, review compared with %q: want a first install held", bd.Status.ActiveBundle, bd.Status.Review.ActiveRevision)
	}
	if c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeReady); c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha2.ReasonAwaitingApproval {
		t.Errorf("Ready = %+v, want False/AwaitingApproval", c)
	}
	mustNotExist(t, &corev1.ConfigMap{}, ns, "keep")

	approver := grantApprover(t, bd.Name)
	approveAs(t, approver, bd.Name, digest1)
	bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	if bd.Status.ActiveBundle != rev1 {
		t.Fatalf("active %s after approving %s", bd.Status.ActiveBundle, rev1)
	}
	if r := bd.Status.Review; r == nil || r.Revision != rev1 || !r.Approved || r.ApprovedBy != approver {
		t.Errorf("status.review = %+v, want %s approved by %s", r, rev1, approver)
	}
	waitValue(t, ns, "keep", "v1")

	// A revision that grows nothing waits as well.
	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) {
		b.Spec.Sources = source(manifests(t, map[string]string{"a.yaml": cmYAML("keep", "v2")}))
	})
	bd = waitAwaiting(t, bd.Name, rev1)
	rev2, digest2 := bd.Status.Review.Revision, bd.Status.Review.Digest
	if bd.Status.Review.Review.GrowsPower || bd.Status.Review.ActiveRevision != rev1 || bd.Status.ActiveBundle != rev1 {
		t.Fatalf("status.review = %+v, active %s: want %s held, growing nothing, %s active", bd.Status.Review, bd.Status.ActiveBundle, rev2, rev1)
	}
	if got := bd.Annotations[v1alpha2.AnnotationApproveRevision]; got != digest1 {
		t.Fatalf("%s = %q, want the approval of %s still there", v1alpha2.AnnotationApproveRevision, got, rev1)
	}
	waitValue(t, ns, "keep", "v1")

	approveAs(t, approver, bd.Name, digest2)
	bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	if bd.Status.ActiveBundle != rev2 {
		t.Fatalf("active %s after approving %s", bd.Status.ActiveBundle, rev2)
	}
	waitValue(t, ns, "keep", "v2")
}

// TestApprovalGateSeparateApprover: the manager runs with
// --require-separate-approver (suite_test.go). The admin who changed the
// spec (core.rukpak.io/requested-by) approves their own revision: not
// accepted, the revision stays held and the message says why; another
// user allowed to approve does, and it is installed.
func TestApprovalGateSeparateApprover(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "separate")
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
	bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	rev1 := bd.Status.ActiveBundle

	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) {
		b.Spec.Sources = source(manifests(t, gatedRBAC(role, "v2", "configmaps", "secrets")))
	})
	bd = waitAwaiting(t, bd.Name, rev1)
	rev2, digest2 := bd.Status.Review.Revision, bd.Status.Review.Digest
	requester := bd.Annotations[v1alpha2.AnnotationRequestedBy]
	if requester == "" {
		t.Fatalf("no %s annotation: the admission policy did not record who asked for %s", v1alpha2.AnnotationRequestedBy, rev2)
	}

	// The requester (the admin, who may approve anything) approves.
	if err := approve(env.Client, bd.Name, digest2); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("the approval given is not accepted: user %q approved the revision they requested, and the manager runs with --require-separate-approver", requester)
	envtest.Eventually(t, 30*time.Second, func() error {
		bd = getBD(t, bd.Name)
		if c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled); c == nil || c.Reason != v1alpha2.ReasonAwaitingApproval || !strings.Contains(c.Message, want) {
			return fmt.Errorf("Installed = %+v, want AwaitingApproval saying %q", c, want)
		}
		return nil
	})
	if by := bd.Annotations[v1alpha2.AnnotationApprovedBy]; by != requester {
		t.Fatalf("%s = %q, want the requester %q", v1alpha2.AnnotationApprovedBy, by, requester)
	}
	if bd.Status.ActiveBundle != rev1 || bd.Status.Review.Approved || slices.Contains(roleResources(t, role), "secrets") {
		t.Fatalf("the requester's own approval let %s through: active %s, review %+v, rules %v", rev2, bd.Status.ActiveBundle, bd.Status.Review, roleResources(t, role))
	}

	// Another user allowed to approve does.
	approver := grantApprover(t, bd.Name)
	approveAs(t, approver, bd.Name, digest2)
	bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	if bd.Status.ActiveBundle != rev2 || !slices.Contains(roleResources(t, role), "secrets") {
		t.Fatalf("after %s approved: active %s (want %s), rules %v", approver, bd.Status.ActiveBundle, rev2, roleResources(t, role))
	}
	if r := bd.Status.Review; r == nil || !r.Approved || r.ApprovedBy != approver {
		t.Errorf("status.review = %+v, want approved by %s", r, approver)
	}
}

// hugeRole is a ClusterRole whose one rule expands to more atoms than a
// review may hold (review.MaxAtoms): 16 verbs × 64 apiGroups × 64
// resources × 10 resourceNames.
func hugeRole(name string) string {
	var verbs, groups, resources, names []string
	for i := range 16 {
		verbs = append(verbs, fmt.Sprintf("verb%d", i))
	}
	for i := range 64 {
		groups = append(groups, fmt.Sprintf("g%d.example.com", i))
		resources = append(resources, fmt.Sprintf("r%d", i))
	}
	for i := range 10 {
		names = append(names, fmt.Sprintf("n%d", i))
	}
	return fmt.Sprintf("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: %s\nrules:\n- apiGroups: [%s]\n  resources: [%s]\n  resourceNames: [%s]\n  verbs: [%s]\n",
		name, strings.Join(groups, ", "), strings.Join(resources, ", "), strings.Join(names, ", "), strings.Join(verbs, ", "))
}

// TestReviewFailedNotApplied: an upgrade that cannot be reviewed (its
// review would be too large) and is refused when applied under Automatic:
// the ReviewTooLarge event says it was not applied, and why, never that it
// was applied without a review.
func TestReviewFailedNotApplied(t *testing.T) {
	ns := env.Namespace(t, "reviewrefused")
	role := envtest.UniqueName("huge")
	bd := newBD(t, ns, manifests(t, map[string]string{"a.yaml": cmYAML("keep", "v1")}))
	t.Cleanup(func() {
		deleteAndWait(t, bd.Name)
		_ = env.Client.Delete(context.Background(), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}})
	})
	waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) {
		b.Spec.Sources = source(manifests(t, map[string]string{"a.yaml": cmYAML("keep", "v2"), "b.yaml": hugeRole(role),
			"c.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: refused\nspec:\n  ports:\n  - port: 99999\n"}))
	})
	waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonValidationFailed)
	waitEvent(t, bd.Name, v1alpha2.ReasonReviewTooLarge, "not applied (ValidationFailed")
	list := &eventsv1.EventList{}
	if err := env.Client.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	for _, e := range list.Items {
		if e.Regarding.Name == bd.Name && (e.Reason == v1alpha2.ReasonReviewFailed || e.Reason == v1alpha2.ReasonReviewTooLarge) && strings.Contains(e.Note, "applied without a review (") {
			t.Fatalf("event says the refused revision was applied: %s", e.Note)
		}
	}
	waitValue(t, ns, "keep", "v1")
}

// TestApprovalGateReviewTooLarge: an upgrade whose review would cost too
// much (its RBAC rules expand past review.MaxAtoms, estimated before
// anything is expanded) is applied under Automatic, with a Warning event
// ReviewTooLarge, and held under PowerGrowth and Always: nothing of it is
// written, the installed revision stays, and Installed and Ready are
// False with reason ReviewTooLarge naming the rule.
func TestApprovalGateReviewTooLarge(t *testing.T) {
	for _, policy := range []v1alpha2.ApprovalPolicy{v1alpha2.ApprovalAutomatic, v1alpha2.ApprovalPowerGrowth, v1alpha2.ApprovalAlways} {
		t.Run(string(policy), func(t *testing.T) {
			ns := env.Namespace(t, "reviewfail")
			role := envtest.UniqueName("huge")
			bd := &v1alpha2.BundleDeployment{
				ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("bd")},
				Spec: v1alpha2.BundleDeploymentSpec{
					ProvisionerClassName: v1alpha2.ClassPlain,
					InstallNamespace:     ns,
					Sources:              source(manifests(t, map[string]string{"a.yaml": cmYAML("keep", "v1")})),
				},
			}
			if err := env.Client.Create(context.Background(), bd); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				deleteAndWait(t, bd.Name)
				_ = env.Client.Delete(context.Background(), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}})
			})
			bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
			rev1 := bd.Status.ActiveBundle

			updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources = source(manifests(t, map[string]string{"a.yaml": cmYAML("keep", "v2"), "b.yaml": hugeRole(role)}))
				b.Spec.Upgrade = &v1alpha2.UpgradePolicy{ApprovalPolicy: policy}
			})
			if policy == v1alpha2.ApprovalAutomatic {
				bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
				if bd.Status.ActiveBundle == rev1 {
					t.Fatalf("still %s active", rev1)
				}
				waitValue(t, ns, "keep", "v2")
				waitEvent(t, bd.Name, v1alpha2.ReasonReviewTooLarge, "applied without a review (spec.upgrade.approval is Automatic)")
				return
			}
			bd = waitHeld(t, bd.Name, v1alpha2.ReasonReviewTooLarge)
			msg := installedMessage(bd)
			for _, want := range []string{"reviewing revision", "ClusterRole " + role + " rules[0]: 16 verbs × 64 apiGroups × 64 resources × 10 resourceNames = 655360 atoms",
				"not reviewed again", rev1 + " remains installed"} {
				if !strings.Contains(msg, want) {
					t.Errorf("Installed message %q lacks %q", msg, want)
				}
			}
			if bd.Status.ActiveBundle != rev1 {
				t.Errorf("active %s, want %s", bd.Status.ActiveBundle, rev1)
			}
			mustNotExist(t, &rbacv1.ClusterRole{}, "", role)
			waitValue(t, ns, "keep", "v1")
		})
	}
}

// TestPreflightBeforeReview: an upgrade the permission preflight refuses
// is not reviewed at all: Installed says MissingPermissions, no review is
// shown, and an upgrade too large to review that the preflight refuses
// is refused as MissingPermissions too, not ReviewTooLarge.
func TestPreflightBeforeReview(t *testing.T) {
	ns := env.Namespace(t, "preflightfirst")
	sa := installer(t, ns)
	bd := saBD(t, env.Client, ns, manifests(t, map[string]string{"a.yaml": cmYAML("keep", "v1")}), sa)
	t.Cleanup(func() { deleteAndWait(t, bd.Name) })
	bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	rev1 := bd.Status.ActiveBundle

	// The installer may not write ClusterRoles.
	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) {
		b.Spec.Sources = source(manifests(t, map[string]string{"a.yaml": cmYAML("keep", "v2"), "b.yaml": hugeRole(envtest.UniqueName("huge"))}))
		b.Spec.Upgrade = &v1alpha2.UpgradePolicy{ApprovalPolicy: v1alpha2.ApprovalPowerGrowth}
	})
	bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonMissingPermissions)
	if bd.Status.Review != nil {
		t.Errorf("status.review = %+v, want none: the preflight refused the revision before any review", bd.Status.Review)
	}
	if bd.Status.ActiveBundle != rev1 {
		t.Errorf("active %s, want %s", bd.Status.ActiveBundle, rev1)
	}
	waitValue(t, ns, "keep", "v1")
}
