//go:build integration

package apply_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// An identity that may write RBAC objects but is no cluster admin (an
// operator's installer) installs a ClusterRole and its binding in one
// plan, first as a direct plan and then as a validated one (an upgrade
// adding a role and its binding): the API server authorizes a binding by
// its role's rules, so the role must be written, and validated, before
// the binding. A role with a rule the identity does not hold is refused
// as a missing permission naming it, and its binding is not written.
func TestRolesBeforeTheirBindings(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "rbac")
	user := envtest.UniqueName("installer")
	manage := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles", "clusterrolebindings"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get"}},
	}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	for _, obj := range []client.Object{manage, binding} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	e := engineOver(t, cfg, false, 0)

	roles := func(rev, verbs, resources string) []string {
		name := user + "-" + rev
		return []string{
			fmt.Sprintf("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: %s}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: %s}\nsubjects:\n- {kind: ServiceAccount, name: operator, namespace: %s}\n", name, name, ns),
			fmt.Sprintf("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: %s}\nrules:\n- {apiGroups: [\"\"], resources: [%s], verbs: [%s]}\n", name, resources, verbs),
		}
	}
	t.Cleanup(func() {
		for _, rev := range []string{"1", "2", "3"} {
			_ = env.Client.Delete(context.Background(), &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user + "-" + rev}})
			_ = env.Client.Delete(context.Background(), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user + "-" + rev}})
		}
	})
	owner := apply.Owner{Name: user, Revision: user + "-1"}

	// A first install: a direct plan, written without a dry-run.
	for i := range 5 { // the writes are concurrent: a race shows within a few runs
		p, err := e.Prepare(objs(t, roles("1", "get, list", "configmaps")...), ns, owner)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Apply(ctx, p, apply.ApplyOptions{Direct: true}); err != nil {
			t.Fatalf("direct apply %d: %v", i, err)
		}
		if i < 4 {
			_ = env.Client.Delete(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user + "-1"}})
			_ = env.Client.Delete(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user + "-1"}})
		}
	}
	// An upgrade that adds a role and its binding: validated by dry-runs
	// first, while the new role does not exist.
	owner.Revision = user + "-2"
	p, err := e.Prepare(objs(t, append(roles("1", "get, list", "configmaps"), roles("2", "watch", "configmaps")...)...), ns, owner)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Apply(ctx, p, apply.ApplyOptions{}); err != nil {
		t.Fatalf("upgrade adding a role and its binding: %v", err)
	}
	if !exists(t, "rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", user+"-2") {
		t.Fatal("the new binding was not written")
	}
	// A role with a rule the identity does not hold, in either kind of
	// plan: a missing permission naming the role; its binding is not
	// written.
	for _, direct := range []bool{true, false} {
		owner.Revision = user + "-3"
		p, err := e.Prepare(objs(t, roles("3", "get", "secrets")...), ns, owner)
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.Apply(ctx, p, apply.ApplyOptions{Direct: direct})
		f := apply.As(err)
		if f == nil || f.Code != apply.CodeForbidden || !strings.Contains(f.Message, "ClusterRole.rbac.authorization.k8s.io "+user+"-3") || !strings.Contains(f.Message, "secrets") {
			t.Fatalf("direct=%v: err = %v, want MissingPermissions naming ClusterRole %s-3 and secrets", direct, err, user)
		}
		if exists(t, "rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", user+"-3") {
			t.Fatalf("direct=%v: the binding of the refused role was written", direct)
		}
	}
}
