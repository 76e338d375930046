//go:build integration

package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

func TestApproveAndReview(t *testing.T) {
	kc := kubeconfig(t)
	name := envtest.UniqueName("approve")
	revs := lifecycle{revs: []fixtureRev{{outcome: v1alpha2.OutcomeHealthy}, {}}, active: 0, lastHealthy: 0}.create(t, name)
	setReview := func(r *v1alpha2.BundleDeploymentReview) func() {
		return func() {
			bd := getBD(t, name)
			bd.Status.Review = r
			if err := testEnv.Client.Status().Update(context.Background(), bd); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A second approver, allowed to approve (and get and patch) this
	// BundleDeployment only.
	approver := envtest.UniqueName("approver")
	grant(t, approver, rbacv1.PolicyRule{APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{"bundledeployments"},
		ResourceNames: []string{name}, Verbs: []string{"get", "patch", v1alpha2.VerbApprove}})
	digest := "sha256:" + strings.Repeat("4f", 32)
	awaiting := &v1alpha2.BundleDeploymentReview{Revision: revs[1].Name, Digest: digest, ActiveRevision: revs[0].Name,
		Review: v1alpha2.RevisionReview{GrowsPower: true, Summary: "User gate-user gains get secrets"}}
	for _, tc := range []struct {
		name       string
		before     func()
		args       []string
		wantErr    string
		wantOut    string
		wantMarked string
		// as runs rukpakctl as this user (default the admin); wantBy is
		// the approved-by annotation wanted.
		as, wantBy string
	}{
		{name: "nothing reviewed", args: []string{"approve", name}, wantErr: "no revision awaits approval"},
		{name: "review nothing", args: []string{"review", name}, wantOut: "no revision reviewed"},
		{name: "review awaiting", before: setReview(awaiting), args: []string{"review", name}, wantOut: "awaiting approval: rukpakctl approve " + name},
		{name: "review yaml", args: []string{"review", name, "-o", "yaml"}, wantOut: "revision: " + revs[1].Name},
		{name: "other revision by name", args: []string{"approve", name, "--revision", revs[0].Name}, wantErr: "is not an approval digest"},
		{name: "the held revision by name", args: []string{"approve", name, "--revision", revs[1].Name}, wantErr: "is not an approval digest"},
		{name: "other digest", args: []string{"approve", name, "--revision", "sha256:" + strings.Repeat("00", 32)}, wantErr: "awaits approval, not sha256:00"},
		{name: "approve", args: []string{"approve", name, "--revision", digest}, wantOut: "approved revision " + revs[1].Name, wantMarked: digest, wantBy: "admin"},
		// The admin's approval was not accepted (say, the admin asked for
		// the revision and the manager requires a separate approver):
		// another user approves the same revision, and admission records
		// them, although approve-revision does not change.
		{name: "approve the same revision as another user", args: []string{"approve", name}, as: approver,
			wantOut: "approved revision " + revs[1].Name, wantMarked: digest, wantBy: approver},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.before != nil {
				tc.before()
			}
			kc := kc
			if tc.as != "" {
				kc = kubeconfigAs(t, tc.as)
			}
			stdout, _, err := run(t, append(tc.args, "--kubeconfig", kc)...)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			}
			if !strings.Contains(stdout, tc.wantOut) {
				t.Errorf("stdout %q does not contain %q", stdout, tc.wantOut)
			}
			bd := getBD(t, name)
			if got := bd.Annotations[v1alpha2.AnnotationApproveRevision]; got != tc.wantMarked {
				t.Errorf("annotation %s = %q, want %q", v1alpha2.AnnotationApproveRevision, got, tc.wantMarked)
			}
			if got := bd.Annotations[v1alpha2.AnnotationApprovedBy]; got != tc.wantBy {
				t.Errorf("annotation %s = %q, want %q", v1alpha2.AnnotationApprovedBy, got, tc.wantBy)
			}
		})
	}
}

// grant binds a ClusterRole of rule to user, removed when the test ends,
// and waits until the authorizer allows the user the rule's last verb on
// its first named resource.
func grant(t *testing.T, user string, rule rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: []rbacv1.PolicyRule{rule}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	for _, obj := range []client.Object{role, binding} {
		if err := testEnv.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = testEnv.Client.Delete(context.Background(), obj) })
	}
	envtest.Eventually(t, 10*time.Second, func() error {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Group: rule.APIGroups[0], Resource: rule.Resources[0],
				Name: rule.ResourceNames[0], Verb: rule.Verbs[len(rule.Verbs)-1]}}}
		if err := testEnv.Client.Create(ctx, sar); err != nil {
			return err
		}
		if !sar.Status.Allowed {
			return fmt.Errorf("user %s not allowed %s yet", user, rule.Verbs[len(rule.Verbs)-1])
		}
		return nil
	})
}
