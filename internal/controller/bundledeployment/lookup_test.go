//go:build integration

package bundledeployment_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// lookupTemplate reads Secret db of namespace %s with Helm's lookup and
// says whether it found it.
const lookupTemplate = `{{- $s := lookup "v1" "Secret" "%s" "db" }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: looked-up
data:
  found: {{ if $s }}"yes"{{ else }}"no"{{ end }}
`

// TestLookupReadsAsTheInstallIdentity installs a chart whose lookup reads
// another team's Secret: the install identity may not read it, so the
// render fails naming the lookup, and the Secret's value appears nowhere.
// Once the ServiceAccount may read it, a retry renders with it.
func TestLookupReadsAsTheInstallIdentity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := env.Namespace(t, "team")
	other := env.Namespace(t, "other")
	const value = "other-teams-password"
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: other}, StringData: map[string]string{"password": value}}
	if err := env.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	sa := installer(t, ns)
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("lookup")},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassHelm,
			InstallNamespace:     ns,
			ServiceAccount:       &v1alpha2.ServiceAccountReference{Name: sa},
			Sources:              chart(t, strings.ReplaceAll(lookupTemplate, "%s", other)),
		},
	}
	if err := env.Client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	got := waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonRenderFailed)
	msg := meta.FindStatusCondition(got.Status.Conditions, v1alpha2.TypeInstalled).Message
	for _, want := range []string{`lookup "v1" "Secret" "` + other + `" "db"`, "forbidden"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not name %q", msg, want)
		}
	}
	if strings.Contains(msg, value) {
		t.Errorf("message %q shows the Secret's value", msg)
	}
	mustNotExist(t, &corev1.ConfigMap{}, ns, "looked-up")

	// Allowed to read it, the ServiceAccount's lookup finds it.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "read-db", Namespace: other}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"db"}, Verbs: []string{"get"}},
	}}
	if err := env.Client.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, roleBinding(other, "read-db", "Role", "read-db", saSubject(ns, sa))); err != nil {
		t.Fatal(err)
	}
	waitReason(t, bd.Name, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	if data, err := configMapData(t, ns, "looked-up"); err != nil || data["found"] != "yes" {
		t.Fatalf("looked-up = %v, %v; want found: yes", data, err)
	}
}
