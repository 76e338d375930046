//go:build integration

package approval_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/admission"
	"github.com/rukpak/rukpak/internal/approval"
	"github.com/rukpak/rukpak/pkg/envtest"
	"github.com/rukpak/rukpak/pkg/failure"
)

// grantApprove lets user approve BundleDeployment name and waits until the
// authorizer sees it.
func grantApprove(t *testing.T, user, name string) {
	t.Helper()
	ctx := context.Background()
	role := envtest.UniqueName("approve")
	for _, obj := range []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{"bundledeployments"},
			Verbs: []string{v1alpha2.VerbApprove}, ResourceNames: []string{name},
		}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}},
	} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	envtest.Eventually(t, 10*time.Second, func() error {
		res, err := kube(t).AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: v1alpha2.VerbApprove, Group: v1alpha2.GroupVersion.Group, Resource: "bundledeployments", Name: name},
		}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if !res.Status.Allowed {
			return fmt.Errorf("%s may not approve %s yet", user, name)
		}
		return nil
	})
}

// annotate merge-patches bd's annotations as c.
func annotate(c client.Client, bd *v1alpha2.BundleDeployment, annotations map[string]string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return err
	}
	return c.Patch(context.Background(), bd, client.RawPatch(types.MergePatchType, patch))
}

// Approving a revision (the approve-revision annotation) needs verb
// approve on the BundleDeployment; admission records the approver, over
// whatever the user wrote; the manager's Checker agrees.
func TestAdmissionApproval(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "team-a")
	bd := newBD(ns, "")
	if err := env.Client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cleanup(t, bd) })
	user := envtest.UniqueName("erin")
	grant(t, ns, user, editBundleDeployments)
	erin := as(t, user, "approvers")
	approve := map[string]string{v1alpha2.AnnotationApproveRevision: "rev-2", v1alpha2.AnnotationApprovedBy: "someone-else"}

	err := annotate(erin, bd.DeepCopy(), approve)
	if !apierrors.IsForbidden(err) {
		t.Fatalf("approve without verb approve = %v, want Forbidden", err)
	}
	wantDenied(t, err, admission.ApprovalPolicyName, fmt.Sprintf(`user %q may not approve revisions of BundleDeployment %q`, user, bd.Name),
		`grant it with a ClusterRole allowing verb "approve" on bundledeployments`)

	grantApprove(t, user, bd.Name)
	if err := annotate(erin, bd, approve); err != nil {
		t.Fatalf("approve with verb approve: %v", err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(bd), bd); err != nil {
		t.Fatal(err)
	}
	if got, groups, _ := approval.Approver(bd); got != user || len(groups) == 0 || groups[0] != "approvers" {
		t.Errorf("approver = %q %v, want %q recorded by admission with group approvers", got, groups, user)
	}

	checker := &approval.Checker{Reviews: kube(t).AuthorizationV1().SubjectAccessReviews()}
	for _, tc := range []struct {
		name, approver string
		wantRefused    bool
	}{
		{name: "allowed approver", approver: user},
		{name: "approver without verb approve", approver: envtest.UniqueName("mallory"), wantRefused: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := bd.DeepCopy()
			in.Annotations[v1alpha2.AnnotationApprovedBy] = tc.approver
			in.Annotations[v1alpha2.AnnotationApprovedByGroups] = ""
			err := checker.CheckApprover(ctx, in)
			switch {
			case tc.wantRefused && failure.Reason(err, "") != v1alpha2.ReasonNotAuthorized:
				t.Fatalf("CheckApprover = %v, want NotAuthorized", err)
			case !tc.wantRefused && err != nil:
				t.Fatalf("CheckApprover = %v, want nil", err)
			}
		})
	}
}
