//go:build integration

package permissions

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/pkg/envtest"
)

// TestMissing asks a real API server with RBAC what a ServiceAccount lacks.
func TestMissing(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "perm")
	other := env.Namespace(t, "perm-other")
	const sa = "installer"
	subject := ServiceAccount(ns, sa)
	binding := func(role string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role, Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}},
		}
	}
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "workloads", Namespace: ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: Verbs},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: Verbs},
		}},
		binding("workloads"),
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "one-secret", Namespace: ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"token"},
				Verbs: []string{"get", "patch", "delete", "list", "watch"}},
		}},
		binding("one-secret"),
	} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	checker := &Checker{Reviews: cs.AuthorizationV1().SubjectAccessReviews(), Concurrency: 4}
	// The RBAC authorizer reads Roles through informers: wait until it has
	// seen both.
	envtest.Eventually(t, 10*time.Second, func() error {
		got, err := checker.Missing(ctx, subject, []Target{
			{Resource: configMaps, Namespace: ns, Name: "a"},
			{Resource: secrets, Namespace: ns, Name: "token"},
		})
		if err != nil {
			return err
		}
		if len(got) != 1 || len(got[0].Verbs) != 3 {
			return fmt.Errorf("the Roles are not in effect yet: missing %+v", got)
		}
		return nil
	})

	tests := []struct {
		name    string
		targets []Target
		want    []Rule
	}{
		{name: "nothing to check", targets: nil, want: nil},
		{name: "ConfigMaps and Deployments in the granted namespace",
			targets: []Target{
				{Resource: configMaps, Namespace: ns, Name: "a"},
				{Resource: configMaps, Namespace: ns, Name: "b"},
				{Resource: deployments, Namespace: ns, Name: "web"},
			},
			want: nil},
		{name: "the same in another namespace",
			targets: []Target{
				{Resource: configMaps, Namespace: ns, Name: "a"},
				{Resource: configMaps, Namespace: other, Name: "a"},
				{Resource: deployments, Namespace: other, Name: "web"},
			},
			want: []Rule{
				rule(other, "", []string{"configmaps"}),
				rule(other, "apps", []string{"deployments"}),
			}},
		{name: "a ClusterRoleBinding is missing cluster-wide",
			targets: []Target{
				{Resource: configMaps, Namespace: ns, Name: "a"},
				{Resource: crbs, Name: "op"},
			},
			want: []Rule{rule("", "rbac.authorization.k8s.io", []string{"clusterrolebindings"})}},
		{name: "the named Secret: get, patch and delete by name; list, watch and create missing",
			targets: []Target{{Resource: secrets, Namespace: ns, Name: "token"}},
			want:    []Rule{rule(ns, "", []string{"secrets"}, "create", "list", "watch")}},
		{name: "another Secret is not covered by the name",
			targets: []Target{
				{Resource: secrets, Namespace: ns, Name: "token"},
				{Resource: secrets, Namespace: ns, Name: "other"},
			},
			want: []Rule{rule(ns, "", []string{"secrets"})}},
		{name: "everything together, merged and sorted",
			targets: []Target{
				{Resource: secrets, Namespace: ns, Name: "token"},
				{Resource: configMaps, Namespace: ns, Name: "a"},
				{Resource: configMaps, Namespace: other, Name: "a"},
				{Resource: secrets, Namespace: other, Name: "token"},
				{Resource: crbs, Name: "op"},
				{Resource: clusterRoles, Name: "op"},
			},
			want: []Rule{
				rule("", "rbac.authorization.k8s.io", []string{"clusterrolebindings", "clusterroles"}),
				rule(ns, "", []string{"secrets"}, "create", "list", "watch"),
				rule(other, "", []string{"configmaps", "secrets"}),
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := checker.Missing(ctx, subject, tt.targets)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Missing =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}

	// The same, with the subject's listed rules first: the same answer,
	// and no SubjectAccessReview where the rules grant everything.
	impersonated := rest.CopyConfig(env.Config)
	impersonated.Impersonate = rest.ImpersonationConfig{UserName: subject.User, Groups: subject.Groups}
	self, err := kubernetes.NewForConfig(impersonated)
	if err != nil {
		t.Fatal(err)
	}
	listed := func(ctx context.Context, ns string) (*authorizationv1.SubjectRulesReviewStatus, error) {
		r, err := self.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx,
			&authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns}}, metav1.CreateOptions{})
		if err != nil {
			return nil, err
		}
		return &r.Status, nil
	}
	incomplete := func(ctx context.Context, ns string) (*authorizationv1.SubjectRulesReviewStatus, error) {
		st, err := listed(ctx, ns)
		if st != nil {
			st.Incomplete = true
		}
		return st, err
	}
	failing := func(context.Context, string) (*authorizationv1.SubjectRulesReviewStatus, error) {
		return nil, errors.New("connection refused")
	}
	for _, tt := range tests {
		for _, rv := range []struct {
			name    string
			rules   RulesReviewer
			reviews func(targets []Target) bool // whether SubjectAccessReviews are expected
		}{
			{"listed", listed, func(ts []Target) bool { return tt.want != nil }},
			{"incomplete list", incomplete, func(ts []Target) bool { return len(ts) > 0 }},
			{"failing list", failing, func(ts []Target) bool { return len(ts) > 0 }},
		} {
			t.Run(tt.name+", "+rv.name, func(t *testing.T) {
				counting := &countingReviews{SubjectAccessReviewInterface: cs.AuthorizationV1().SubjectAccessReviews()}
				c := &Checker{Reviews: counting}
				got, err := c.MissingListed(ctx, subject, tt.targets, rv.rules)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("MissingListed =\n%+v\nwant\n%+v", got, tt.want)
				}
				if asked := counting.n.Load(); (asked > 0) != rv.reviews(tt.targets) {
					t.Fatalf("%d SubjectAccessReviews asked; want some: %v", asked, rv.reviews(tt.targets))
				}
			})
		}
	}

	t.Run("a cluster-admin lacks nothing", func(t *testing.T) {
		admin := Subject{User: "admin", Groups: []string{"system:masters"}}
		got, err := checker.Missing(ctx, admin, tests[len(tests)-1].targets)
		if err != nil || got != nil {
			t.Fatalf("Missing = %+v, %v; want nothing", got, err)
		}
	})
}

// countingReviews counts the SubjectAccessReviews created through it.
type countingReviews struct {
	authorizationv1client.SubjectAccessReviewInterface
	n atomic.Int64
}

func (c *countingReviews) Create(ctx context.Context, sar *authorizationv1.SubjectAccessReview, opts metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error) {
	c.n.Add(1)
	return c.SubjectAccessReviewInterface.Create(ctx, sar, opts)
}
