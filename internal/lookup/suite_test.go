//go:build integration

package lookup

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/pkg/envtest"
)

var env *envtest.Env

func TestMain(m *testing.M) { envtest.Run(m, &env) }

// fixture is a namespace holding what the tests look up, and a
// ServiceAccount that may get and list its ConfigMaps but get only the
// Secrets "db" and "missing".
type fixture struct {
	ns string
	// asReader acts as the ServiceAccount; asAdmin as the test's admin.
	asReader, asAdmin *Resolver
}

// newFixture creates a fixture in a new namespace, with limits for the
// reader's Resolver.
func newFixture(t *testing.T, limits Limits) *fixture {
	t.Helper()
	ctx := context.Background()
	ns := env.Namespace(t, "lookup")
	objs := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: ns}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"db", "missing"}, Verbs: []string{"get"}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "reader", Namespace: ns}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
			Data: map[string][]byte{"password": []byte("stored-Passw0rd")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "private", Namespace: ns},
			Data: map[string][]byte{"token": []byte("not-for-the-chart")}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: ns}, Data: map[string]string{"next": "b"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: ns}, Data: map[string]string{"next": "c"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: ns}, Data: map[string]string{"next": "d"}},
	}
	for _, o := range objs {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: serviceaccount.MakeUsername(ns, "reader")}
	reader, err := client.New(cfg, client.Options{Scheme: env.Scheme, Mapper: env.Client.RESTMapper()})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{
		ns:       ns,
		asReader: NewResolver(reader, env.Client.RESTMapper(), limits),
		asAdmin:  NewResolver(env.Client, env.Client.RESTMapper(), limits),
	}
}
