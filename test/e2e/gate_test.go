package e2e

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/template"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// Rules an upgrade of the gate fixtures adds to their ClusterRole.
const (
	gateSecretsRule = `{apiGroups: [""], resources: [secrets], verbs: [get, list]}`
	gatePodsRule    = `{apiGroups: [""], resources: [pods], verbs: [get]}`
)

// gateParams fill the templates of test/e2e/testdata/gate (README.md
// there).
type gateParams struct {
	Name, Namespace, Value string
	Rules                  []string
}

// gateSource renders the gate fixture of format (plain, helm or registry)
// with p and returns it as a source.
func gateSource(t *testing.T, format string, p gateParams) []v1alpha2.BundleSource {
	t.Helper()
	files := dirFiles(t, filepath.Join("testdata", "gate", format), "")
	for path, content := range files {
		tmpl, err := template.New(path).Delims("[[", "]]").Option("missingkey=error").Parse(content)
		if err != nil {
			t.Fatalf("parsing %s: %v", path, err)
		}
		var out bytes.Buffer
		if err := tmpl.Execute(&out, p); err != nil {
			t.Fatalf("rendering %s: %v", path, err)
		}
		files[path] = out.String()
	}
	return treeSource(t, files)
}

// kubeconfigAs writes a kubeconfig of the suite's cluster that
// impersonates user (in system:authenticated) and returns its path.
func kubeconfigAs(t *testing.T, user string) string {
	t.Helper()
	kc, err := clientcmd.LoadFromFile(suite.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range kc.AuthInfos {
		a.Impersonate, a.ImpersonateGroups = user, []string{"system:authenticated"}
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// waitAwaitingApproval waits until the newest revision of bd, one other
// than active, is held with reason AwaitingApproval (Installed and Ready
// False) and returns the BundleDeployment.
func waitAwaitingApproval(t *testing.T, name, active string) *v1alpha2.BundleDeployment {
	t.Helper()
	bd := &v1alpha2.BundleDeployment{}
	envtest.Eventually(t, 60*time.Second, func() error {
		if err := suite.client.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
			return err
		}
		for _, typ := range []string{v1alpha2.TypeInstalled, v1alpha2.TypeReady} {
			c := meta.FindStatusCondition(bd.Status.Conditions, typ)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha2.ReasonAwaitingApproval || c.ObservedGeneration != bd.Generation {
				return fmt.Errorf("%s = %+v, want False/AwaitingApproval for generation %d", typ, c, bd.Generation)
			}
		}
		if r := bd.Status.Review; r == nil || r.Approved || r.Revision == active || r.ActiveRevision != active {
			return fmt.Errorf("status.review = %+v, want an unapproved review of a revision compared with %s", r, active)
		}
		return nil
	})
	return bd
}

// waitActive waits until bd is installed (for its generation) with a
// revision other than previous active, and returns it.
func waitActive(t *testing.T, name, previous string) *v1alpha2.BundleDeployment {
	t.Helper()
	bd := &v1alpha2.BundleDeployment{}
	envtest.Eventually(t, 60*time.Second, func() error {
		if err := suite.client.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
			return err
		}
		c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled)
		if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != bd.Generation || bd.Status.ActiveBundle == previous {
			return fmt.Errorf("Installed = %+v, active %s (want one after %s)", c, bd.Status.ActiveBundle, previous)
		}
		return nil
	})
	return bd
}

// ownedClusterRBAC returns "ClusterRole NAME" and "ClusterRoleBinding
// NAME" of the RBAC objects bd installed, sorted.
func ownedClusterRBAC(t *testing.T, bd string) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	roles := &rbacv1.ClusterRoleList{}
	if err := suite.client.List(ctx, roles, client.MatchingLabels{v1alpha2.LabelOwnerName: bd}); err != nil {
		t.Fatal(err)
	}
	for _, r := range roles.Items {
		out = append(out, "ClusterRole "+r.Name)
	}
	bindings := &rbacv1.ClusterRoleBindingList{}
	if err := suite.client.List(ctx, bindings, client.MatchingLabels{v1alpha2.LabelOwnerName: bd}); err != nil {
		t.Fatal(err)
	}
	for _, b := range bindings.Items {
		out = append(out, "ClusterRoleBinding "+b.Name)
	}
	slices.Sort(out)
	return out
}

// clusterRulesOf returns the resources the ClusterRoles bd installed grant.
func clusterRulesOf(t *testing.T, bd string) []string {
	t.Helper()
	roles := &rbacv1.ClusterRoleList{}
	if err := suite.client.List(context.Background(), roles, client.MatchingLabels{v1alpha2.LabelOwnerName: bd}); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range roles.Items {
		for _, rule := range r.Rules {
			out = append(out, rule.Resources...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func reviewObjects(objs []v1alpha2.ReviewObject) []string {
	out := []string{}
	for _, o := range objs {
		out = append(out, o.Kind+" "+o.Name)
	}
	slices.Sort(out)
	return out
}

func reviewChanged(cs []v1alpha2.ReviewObjectChange) []string {
	out := []string{}
	for _, c := range cs {
		name := c.Object.Name
		if c.Object.Namespace != "" {
			name = c.Object.Namespace + "/" + name
		}
		out = append(out, c.Object.Kind+" "+name)
	}
	slices.Sort(out)
	return out
}

// TestApprovalGateFormats runs the approval gate of docs/lifecycle.md
// ("Approving upgrades") on the local cluster, for a plain bundle, a Helm
// chart and a registry+v1 bundle of the same objects (testdata/gate), in
// parallel: under spec.upgrade.approval PowerGrowth an upgrade that adds a
// ClusterRole rule (secrets: get, list) waits with AwaitingApproval; the
// installed revision stays, its drift corrected; the review (status and
// rukpakctl review) lists exactly the new rule and the changed objects; a
// user without verb approve is refused by admission; rukpakctl approve by
// one who has it installs the revision; an upgrade that grows nothing is
// installed without approval; and the approval of one revision does not
// let a later one that grows through.
func TestApprovalGateFormats(t *testing.T) {
	for _, tc := range []struct {
		format, class string
		// sa is the ServiceAccount the ClusterRole is bound to.
		sa string
		// renamed is set when a change of rules renames the ClusterRole
		// and its binding (registry+v1 names them by a hash of the rules):
		// the review adds and removes them instead of changing them.
		renamed bool
	}{
		{format: "plain", class: v1alpha2.ClassPlain, sa: "gate-sa"},
		{format: "helm", class: v1alpha2.ClassHelm, sa: "gate-sa"},
		{format: "registry", class: v1alpha2.ClassRegistry, sa: "gate-sa", renamed: true},
	} {
		t.Run(tc.format, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			name := envtest.UniqueName("gate-" + tc.format)
			ns := name
			params := func(value string, rules ...string) gateParams {
				return gateParams{Name: name, Namespace: ns, Value: value, Rules: rules}
			}
			bd := &v1alpha2.BundleDeployment{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: v1alpha2.BundleDeploymentSpec{
					ProvisionerClassName: tc.class,
					InstallNamespace:     ns,
					Sources:              gateSource(t, tc.format, params("v1")),
					Upgrade:              &v1alpha2.UpgradePolicy{ApprovalPolicy: v1alpha2.ApprovalPowerGrowth},
				},
			}
			cleanupBD(t, name)
			if err := suite.client.Create(ctx, bd); err != nil {
				t.Fatal(err)
			}
			// A first install is not held by PowerGrowth.
			rev1 := waitActive(t, name, "").Status.ActiveBundle
			rbac1 := ownedClusterRBAC(t, name)

			// Revision 2 adds a rule: held.
			updateSpec(t, name, func(s *v1alpha2.BundleDeploymentSpec) {
				s.Sources = gateSource(t, tc.format, params("v2", gateSecretsRule))
			})
			bd = waitAwaitingApproval(t, name, rev1)
			rev2, digest2 := bd.Status.Review.Revision, bd.Status.Review.Digest
			if bd.Status.ActiveBundle != rev1 {
				t.Fatalf("active revision %s while %s is held, want %s", bd.Status.ActiveBundle, rev2, rev1)
			}
			if got := clusterRulesOf(t, name); slices.Contains(got, "secrets") {
				t.Fatalf("the held revision was applied: the ClusterRole grants %v", got)
			}
			if v := configMapValue(t, ns, "gate-keep"); v != "v1" {
				t.Fatalf("gate-keep = %q while revision 2 is held, want v1", v)
			}

			t.Run("the review lists exactly the new rule and the changed objects", func(t *testing.T) {
				r := bd.Status.Review.Review
				if !r.GrowsPower {
					t.Errorf("growsPower false")
				}
				want := v1alpha2.ReviewGrant{
					Subject: v1alpha2.ReviewSubject{Kind: "ServiceAccount", Namespace: ns, Name: tc.sa},
					Rule:    v1alpha2.ReviewRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"secrets"}},
				}
				if r.RBAC.GainedCount != 1 || len(r.RBAC.Gained) != 1 || !equalGrant(r.RBAC.Gained[0], want) || r.RBAC.LostCount != 0 {
					t.Errorf("rbac = %+v, want exactly %+v gained and nothing lost", r.RBAC, want)
				}
				changed := []string{"ConfigMap " + ns + "/gate-keep"}
				added, removed := []string{}, []string{}
				if tc.renamed {
					removed = rbac1
				} else {
					changed = append(changed, "ClusterRole "+name+"-gate")
					slices.Sort(changed)
				}
				if got := reviewChanged(r.Objects.Changed); !slices.Equal(got, changed) || int(r.Objects.ChangedCount) != len(changed) {
					t.Errorf("changed objects = %v (count %d), want %v", got, r.Objects.ChangedCount, changed)
				}
				if got := reviewObjects(r.Objects.Removed); !slices.Equal(got, removed) {
					t.Errorf("removed objects = %v, want %v", got, removed)
				}
				if tc.renamed {
					added = []string{"ClusterRole", "ClusterRoleBinding"}
				}
				var addedKinds []string
				for _, o := range r.Objects.Added {
					addedKinds = append(addedKinds, o.Kind)
				}
				slices.Sort(addedKinds)
				if !slices.Equal(addedKinds, added) {
					t.Errorf("added objects = %v, want one of each of %v", r.Objects.Added, added)
				}

				out, err := rukpakctl("review", name)
				if err != nil {
					t.Fatalf("rukpakctl review: %v\n%s", err, out)
				}
				for _, line := range append([]string{
					"Revision:        " + rev2,
					"Compared with:   " + rev1,
					"Approval:        awaiting approval: rukpakctl approve " + name + " (policy PowerGrowth)",
					"Grows power:     true",
					"RBAC:            1 rules gained, 0 lost, by 1 subjects",
					"  + ServiceAccount " + ns + "/" + tc.sa + ": get,list resources [secrets] of apiGroups [] cluster-wide",
				}, prefixed("  ~ ", changed)...) {
					if !strings.Contains(out, line+"\n") {
						t.Errorf("rukpakctl review lacks the line %q:\n%s", line, out)
					}
				}
			})

			t.Run("the installed revision is still corrected for drift", func(t *testing.T) {
				if err := suite.client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gate-keep"}}); err != nil {
					t.Fatal(err)
				}
				envtest.Eventually(t, 30*time.Second, func() error {
					if v := configMapData(t, ns, "gate-keep")["value"]; v != "v1" {
						return fmt.Errorf("gate-keep value %q, want v1 back", v)
					}
					return nil
				})
				bd = waitAwaitingApproval(t, name, rev1)
				if bd.Status.Review.Revision != rev2 {
					t.Fatalf("held revision %s, want %s", bd.Status.Review.Revision, rev2)
				}
			})

			attrs := authorizationv1.ResourceAttributes{Group: v1alpha2.GroupVersion.Group, Resource: "bundledeployments", Name: name}
			bdRule := func(verbs ...string) rbacv1.PolicyRule {
				return rbacv1.PolicyRule{APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{"bundledeployments"}, ResourceNames: []string{name}, Verbs: verbs}
			}

			t.Run("a user without verb approve is refused", func(t *testing.T) {
				user := name + "-nobody"
				grantTo(t, user, "", bdRule("get", "patch"))
				patch := attrs
				patch.Verb = "patch"
				waitAllowed(t, user, []string{"system:authenticated"}, patch, true)
				out, err := rukpakctl("approve", name, "--kubeconfig", kubeconfigAs(t, user))
				if err == nil {
					t.Fatalf("rukpakctl approve as %s succeeded:\n%s", user, out)
				}
				if want := fmt.Sprintf("user %q may not approve revisions of BundleDeployment %q", user, name); !strings.Contains(out, want) {
					t.Errorf("the refusal does not say %q:\n%s", want, out)
				}
				got := &v1alpha2.BundleDeployment{}
				if err := suite.client.Get(ctx, client.ObjectKey{Name: name}, got); err != nil {
					t.Fatal(err)
				}
				if v, ok := got.Annotations[v1alpha2.AnnotationApproveRevision]; ok {
					t.Fatalf("the refused approval left %s=%s", v1alpha2.AnnotationApproveRevision, v)
				}
			})

			// The approver's grant lasts until the end of the test: it
			// approves again below.
			approver := name + "-approver"
			grantTo(t, approver, "", bdRule("get", "patch", v1alpha2.VerbApprove))
			t.Run("rukpakctl approve by a user with verb approve installs it", func(t *testing.T) {
				approve := attrs
				approve.Verb = v1alpha2.VerbApprove
				waitAllowed(t, approver, []string{"system:authenticated"}, approve, true)
				out, err := rukpakctl("approve", name, "--revision", digest2, "--kubeconfig", kubeconfigAs(t, approver))
				if err != nil {
					t.Fatalf("rukpakctl approve as %s: %v\n%s", approver, err, out)
				}
				bd = waitActive(t, name, rev1)
				if bd.Status.ActiveBundle != rev2 {
					t.Fatalf("active %s after approving %s", bd.Status.ActiveBundle, rev2)
				}
				if by := bd.Annotations[v1alpha2.AnnotationApprovedBy]; by != approver {
					t.Errorf("%s = %q, want %q", v1alpha2.AnnotationApprovedBy, by, approver)
				}
				if r := bd.Status.Review; r == nil || r.Revision != rev2 || !r.Approved || r.ApprovedBy != approver {
					t.Errorf("status.review = %+v, want %s approved by %s", r, rev2, approver)
				}
				if got := clusterRulesOf(t, name); !slices.Contains(got, "secrets") {
					t.Errorf("the approved revision's ClusterRole grants %v, want secrets too", got)
				}
				if v := configMapValue(t, ns, "gate-keep"); v != "v2" {
					t.Errorf("gate-keep = %q, want v2", v)
				}
				if tc.renamed {
					// The review's added objects are what was installed.
					var added []string
					for _, o := range bd.Status.Review.Review.Objects.Added {
						added = append(added, o.Kind+" "+o.Name)
					}
					slices.Sort(added)
					if got := ownedClusterRBAC(t, name); !slices.Equal(got, added) {
						t.Errorf("installed cluster RBAC %v, the review added %v", got, added)
					}
				}
			})
			if t.Failed() {
				return
			}

			// Revision 3 grows nothing: installed without approval.
			updateSpec(t, name, func(s *v1alpha2.BundleDeploymentSpec) {
				s.Sources = gateSource(t, tc.format, params("v3", gateSecretsRule))
			})
			bd = waitActive(t, name, rev2)
			rev3 := bd.Status.ActiveBundle
			if r := bd.Status.Review; r == nil || r.Revision != rev3 || r.Review.GrowsPower || !r.Approved {
				t.Errorf("status.review of the upgrade that grows nothing = %+v", r)
			}
			if v := configMapValue(t, ns, "gate-keep"); v != "v3" {
				t.Errorf("gate-keep = %q, want v3", v)
			}

			// Revision 4 grows again: the approval of revision 2 (still in
			// the annotation) does not let it through.
			updateSpec(t, name, func(s *v1alpha2.BundleDeploymentSpec) {
				s.Sources = gateSource(t, tc.format, params("v4", gateSecretsRule, gatePodsRule))
			})
			bd = waitAwaitingApproval(t, name, rev3)
			if a := bd.Annotations[v1alpha2.AnnotationApproveRevision]; a != digest2 {
				t.Errorf("%s = %q, want the approval of %s (%s)", v1alpha2.AnnotationApproveRevision, a, rev2, digest2)
			}
			if got := clusterRulesOf(t, name); bd.Status.ActiveBundle != rev3 || slices.Contains(got, "pods") {
				t.Fatalf("revision %s applied on the approval of %s: active %s, rules %v", bd.Status.Review.Revision, rev2, bd.Status.ActiveBundle, got)
			}
			// Approving the earlier revision's digest is refused by the CLI.
			out, err := rukpakctl("approve", name, "--revision", digest2, "--kubeconfig", kubeconfigAs(t, approver))
			if err == nil || !strings.Contains(out, "awaits approval, not "+digest2) || strings.Contains(out, "approved revision") {
				t.Errorf("rukpakctl approve --revision %s while %s awaits approval: %v\n%s", digest2, bd.Status.Review.Revision, err, out)
			}
		})
	}
}

// equalGrant compares grants, verbs in any order.
func equalGrant(a, b v1alpha2.ReviewGrant) bool {
	va, vb := slices.Sorted(slices.Values(a.Rule.Verbs)), slices.Sorted(slices.Values(b.Rule.Verbs))
	a.Rule.Verbs, b.Rule.Verbs = nil, nil
	return slices.Equal(va, vb) && a.Subject == b.Subject &&
		a.Rule.Namespace == b.Rule.Namespace && slices.Equal(a.Rule.APIGroups, b.Rule.APIGroups) &&
		slices.Equal(a.Rule.Resources, b.Rule.Resources) && slices.Equal(a.Rule.ResourceNames, b.Rule.ResourceNames) &&
		slices.Equal(a.Rule.NonResourceURLs, b.Rule.NonResourceURLs) && a.Rule.Truncated == b.Rule.Truncated
}

func prefixed(prefix string, lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = prefix + l
	}
	return out
}
