package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// installerVerbs are what rukpak does to every object it manages (as in
// examples/team-install.yaml).
var installerVerbs = []string{"create", "delete", "get", "list", "patch", "watch"}

// tryKubectl runs kubectl with stdin (when not empty) and returns its
// combined output and error, for commands expected to fail.
func tryKubectl(stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(suite.clusterBin, "kubectl"), args...)
	cmd.Env = append(cmd.Environ(), "KUBECONFIG="+suite.kubeconfig)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// exitCode is the exit status of a finished command, 0 without error and
// -1 when err is not an exit status.
func exitCode(err error) int {
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.ExitCode()
	}
	return -1
}

// createOwned creates objs as the admin and deletes them when the test ends
// (in reverse order).
func createOwned(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		if err := suite.client.Create(context.Background(), obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
		t.Cleanup(func() {
			if err := suite.client.Delete(context.Background(), obj); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %T %s: %v", obj, obj.GetName(), err)
			}
		})
	}
}

// ownSource is source, and deletes the ConfigMap when the test ends.
func ownSource(t *testing.T, files map[string]string) []v1alpha2.BundleSource {
	t.Helper()
	srcs := source(t, files)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: v1alpha2.SystemNamespace, Name: srcs[0].ConfigMaps[0].ConfigMap.Name}}
	t.Cleanup(func() {
		if err := suite.client.Delete(context.Background(), cm); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting ConfigMap %s/%s: %v", cm.Namespace, cm.Name, err)
		}
	})
	return srcs
}

// testNamespace creates a namespace with a unique name, deleted when the
// test ends.
func testNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName(prefix)}}
	createOwned(t, ns)
	return ns.Name
}

// installerAccount creates ServiceAccount installer in ns with the Role of
// examples/team-install.yaml (the engine's verbs on ConfigMaps, Services
// and Deployments in ns) and returns its name.
func installerAccount(t *testing.T, ns string) string {
	t.Helper()
	const name = "installer"
	createOwned(t,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps", "services"}, Verbs: installerVerbs},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: installerVerbs},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}},
	)
	return name
}

// cleanupBD deletes BundleDeployment name when the test ends and waits
// until it is gone. Register it after what the uninstall needs (the
// ServiceAccount and its RBAC), so that it runs before they are deleted.
func cleanupBD(t *testing.T, name string) {
	t.Helper()
	t.Cleanup(func() {
		ctx := context.Background()
		bd := &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := suite.client.Delete(ctx, bd); apierrors.IsNotFound(err) {
			return
		} else if err != nil {
			t.Errorf("deleting BundleDeployment %s: %v", name, err)
			return
		}
		deadline := time.Now().Add(60 * time.Second)
		for {
			err := suite.client.Get(ctx, client.ObjectKey{Name: name}, &v1alpha2.BundleDeployment{})
			if apierrors.IsNotFound(err) {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("BundleDeployment %s not gone within 60s (err %v)", name, err)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

// contentToken returns a token of a new ServiceAccount allowed to download
// Bundle content (get bundles/content), for `rukpakctl preview NAME`: the
// suite's kubeconfig authenticates with a client certificate, which the
// content server does not take.
func contentToken(t *testing.T) string {
	t.Helper()
	name := envtest.UniqueName("preview")
	createOwned(t,
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{"bundles/content"}, Verbs: []string{"get"}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: name}}},
	)
	tok := token(t, name)
	t.Cleanup(func() {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
		if err := suite.client.Delete(context.Background(), sa); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting ServiceAccount default/%s: %v", name, err)
		}
	})
	return tok
}

// previewAs runs `rukpakctl preview name` until the content server accepts
// the token (its binding takes a moment to reach the authorizer) and
// returns the output and exit status of that run.
func previewAs(t *testing.T, name, tok string) (string, int) {
	t.Helper()
	var out string
	var code int
	envtest.Eventually(t, 20*time.Second, func() error {
		var err error
		out, err = rukpakctl("preview", name, "--token", tok)
		// The report starts "BundleDeployment NAME installs its N object(s)".
		if code = exitCode(err); code != 0 && !strings.Contains(out, "BundleDeployment "+name+" installs") {
			return fmt.Errorf("rukpakctl preview %s: exit %d:\n%s", name, code, out)
		}
		return nil
	})
	return out, code
}

// TestTeamInstallsAsServiceAccount applies examples/team-install.yaml: the
// team's bundle is installed as its ServiceAccount, becomes healthy on the
// simulated node, `rukpakctl preview` finds nothing missing, and deleting
// the BundleDeployment removes its objects.
func TestTeamInstallsAsServiceAccount(t *testing.T) {
	ctx := context.Background()
	const name, ns = "team-app", "team-a"
	example := fixture("examples", "team-install.yaml")
	t.Cleanup(func() {
		if out, err := tryKubectl("", "delete", "-f", example, "--ignore-not-found", "--timeout=120s"); err != nil {
			t.Errorf("kubectl delete -f %s: %v\n%s", example, err, out)
		}
	})
	cleanupBD(t, name)
	kubectl(t, "apply", "-f", example)

	bd := waitInstalled(t, name)
	if bd.Spec.ServiceAccount == nil || bd.Spec.ServiceAccount.Name != "installer" {
		t.Fatalf("spec.serviceAccount = %+v, want installer", bd.Spec.ServiceAccount)
	}
	waitAvailable(t, ns, name, 1)
	waitCondition(t, name, v1alpha2.TypeHealthy, metav1.ConditionTrue, v1alpha2.ReasonHealthy)

	owned := []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team-app-settings"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
	}
	for _, obj := range owned {
		if err := suite.client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatalf("%T %s/%s: %v", obj, ns, obj.GetName(), err)
		}
		l := obj.GetLabels()
		if l[v1alpha2.LabelOwnerKind] != v1alpha2.BundleDeploymentKind || l[v1alpha2.LabelOwnerName] != name {
			t.Fatalf("%T %s/%s has labels %v, want %s=%s and %s=%s", obj, ns, obj.GetName(), l,
				v1alpha2.LabelOwnerKind, v1alpha2.BundleDeploymentKind, v1alpha2.LabelOwnerName, name)
		}
	}

	out, code := previewAs(t, name, contentToken(t))
	if code != 0 {
		t.Fatalf("rukpakctl preview %s: exit %d, want 0 (nothing missing):\n%s", name, code, out)
	}
	if !strings.Contains(out, "ServiceAccount team-a/installer has every permission") || strings.Contains(out, "MISSING") {
		t.Fatalf("rukpakctl preview %s should find every rule OK:\n%s", name, out)
	}
	rows := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, ns+" ") {
			rows++
			if !strings.HasSuffix(strings.TrimSpace(line), "OK") {
				t.Fatalf("rule %q is not OK:\n%s", line, out)
			}
		}
	}
	if rows == 0 {
		t.Fatalf("rukpakctl preview %s lists no rule for namespace %s:\n%s", name, ns, out)
	}

	// Uninstalled as the ServiceAccount: every object goes.
	deleteBD(t, name)
	for _, obj := range owned {
		waitGone(t, obj, ns, obj.GetName())
	}
}

// TestEscalationIsRefused installs, as a ServiceAccount allowed only
// ConfigMaps, Services and Deployments, a bundle that binds that very
// ServiceAccount to cluster-admin: refused before anything is applied,
// and `rukpakctl preview` shows what is missing and how to grant it.
func TestEscalationIsRefused(t *testing.T) {
	ctx := context.Background()
	ns := testNamespace(t, "escalate")
	sa := installerAccount(t, ns)
	name, crb := envtest.UniqueName("escalate"), envtest.UniqueName("escalate-admin")
	binding := fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: %s
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects:
- {kind: ServiceAccount, name: %s, namespace: %s}
`, crb, sa, ns)
	srcs := ownSource(t, map[string]string{"01_config.yaml": configMapYAML("settings", "v1"), "02_binding.yaml": binding})
	t.Cleanup(func() { // only if the test failed to keep it out
		_ = suite.client.Delete(context.Background(), &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: crb}})
	})
	tok := contentToken(t)
	cleanupBD(t, name)
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     ns,
			ServiceAccount:       &v1alpha2.ServiceAccountReference{Name: sa},
			Sources:              srcs,
		},
	}
	if err := suite.client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}

	bd = waitCondition(t, name, v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonMissingPermissions)
	msg := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled).Message
	for _, want := range []string{"ServiceAccount " + ns + "/" + sa, "clusterrolebindings", "rbac.authorization.k8s.io", "ClusterRole"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("message %q does not name %q", msg, want)
		}
	}
	// Nothing of the revision was applied, not even the ConfigMap the
	// ServiceAccount may create.
	nothingApplied := func() {
		t.Helper()
		if err := suite.client.Get(ctx, client.ObjectKey{Name: crb}, &rbacv1.ClusterRoleBinding{}); !apierrors.IsNotFound(err) {
			t.Fatalf("ClusterRoleBinding %s exists (err %v): the escalation was applied", crb, err)
		}
		if err := suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "settings"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Fatalf("ConfigMap %s/settings exists (err %v): part of a refused revision was applied", ns, err)
		}
		out, err := tryKubectl("", "auth", "can-i", "*", "*", "--as=system:serviceaccount:"+ns+":"+sa)
		if strings.TrimSpace(out) != "no" || exitCode(err) != 1 {
			t.Fatalf("kubectl auth can-i '*' '*' as the ServiceAccount: %q (err %v), want no", out, err)
		}
	}
	nothingApplied()

	out, code := previewAs(t, name, tok)
	if code != 1 {
		t.Fatalf("rukpakctl preview %s: exit %d, want 1 (a rule is missing):\n%s", name, code, out)
	}
	var missingRow string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "clusterrolebindings") && strings.Contains(line, "rbac.authorization.k8s.io") && strings.HasPrefix(line, "(cluster-wide)") {
			missingRow = line
		}
	}
	if !strings.HasSuffix(strings.TrimSpace(missingRow), "MISSING") {
		t.Fatalf("rukpakctl preview %s should list clusterrolebindings as MISSING:\n%s", name, out)
	}
	for _, want := range []string{"kind: ClusterRole\n", "kind: ClusterRoleBinding\n", "- clusterrolebindings\n", "name: " + sa + "\n", "namespace: " + ns + "\n"} {
		if !strings.Contains(out, want) {
			t.Fatalf("rukpakctl preview %s output lacks %q in the RBAC granting what is missing:\n%s", name, want, out)
		}
	}
	// The manager re-checks refusals that wait for an admin; still nothing.
	waitCondition(t, name, v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonMissingPermissions)
	nothingApplied()
}

// securityBD is a BundleDeployment installing configMap (in rukpak-system)
// into ns as ServiceAccount sa with the plain class.
func securityBD(name, ns, sa, configMap string) string {
	return fmt.Sprintf(`apiVersion: core.rukpak.io/v1alpha2
kind: BundleDeployment
metadata:
  name: %s
spec:
  provisionerClassName: %s
  installNamespace: %s
  serviceAccount: {name: %s}
  sources:
  - type: configMaps
    configMaps:
    - configMap: {name: %s}
      path: manifests
`, name, v1alpha2.ClassPlain, ns, sa, configMap)
}

// TestWhoMayCreateWhat: a user who may write BundleDeployments may create
// one only once they may also impersonate its ServiceAccount and use its
// class; the admission policies' refusals name what is missing, and the
// BundleDeployment records who asked for it.
func TestWhoMayCreateWhat(t *testing.T) {
	const user = "dana"
	ns := testNamespace(t, "dana")
	sa := installerAccount(t, ns)
	name := envtest.UniqueName("dana")
	cmName := ownSource(t, map[string]string{"cm.yaml": configMapYAML("settings", "from-dana")})[0].ConfigMaps[0].ConfigMap.Name
	cleanupBD(t, name)
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	bdYAML := securityBD(name, ns, sa, cmName)
	createAsDana := func() (string, error) { return tryKubectl(bdYAML, "create", "-f", "-", "--as="+user) }

	// dana may write BundleDeployments, nothing more.
	writer := envtest.UniqueName("dana-bundledeployments")
	createOwned(t,
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: writer}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{"bundledeployments"}, Verbs: []string{"create", "get", "update", "delete"}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: writer},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: writer}, Subjects: subject},
	)
	refusedFor := func(step string, wants ...string) {
		t.Helper()
		envtest.Eventually(t, 20*time.Second, func() error {
			out, err := createAsDana()
			if err == nil {
				return fmt.Errorf("%s: kubectl create --as=%s succeeded:\n%s", step, user, out)
			}
			for _, want := range wants {
				if !strings.Contains(out, want) {
					return fmt.Errorf("%s: refusal does not contain %q:\n%s", step, want, out)
				}
			}
			return nil
		})
	}
	refusedFor("without impersonate", "rukpak-install-authorization", `user "dana" may not impersonate serviceaccounts "`+sa+`" in namespace "`+ns+`"`)

	// dana may impersonate the ServiceAccount, but not use the class.
	createOwned(t,
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "dana-impersonates", Namespace: ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, ResourceNames: []string{sa}, Verbs: []string{"impersonate"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "dana-impersonates", Namespace: ns},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "dana-impersonates"}, Subjects: subject},
	)
	refusedFor("without use", "rukpak-install-authorization", `user "dana" may not use provisionerclasses "`+v1alpha2.ClassPlain+`"`)

	// dana may use the plain class: the BundleDeployment is created and
	// installed, and records her as the requester.
	class := envtest.UniqueName("dana-plain")
	createOwned(t,
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: class}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{"provisionerclasses"}, ResourceNames: []string{v1alpha2.ClassPlain}, Verbs: []string{"use"}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: class},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: class}, Subjects: subject},
		// and an admin lets her use her source ConfigMap.
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: class, Namespace: v1alpha2.SystemNamespace}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{cmName}, Verbs: []string{"use"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: class, Namespace: v1alpha2.SystemNamespace},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: class}, Subjects: subject},
	)
	envtest.Eventually(t, 20*time.Second, func() error {
		if out, err := createAsDana(); err != nil {
			return fmt.Errorf("kubectl create --as=%s: %w\n%s", user, err, out)
		}
		return nil
	})
	bd := waitInstalled(t, name)
	if got := bd.Annotations[v1alpha2.AnnotationRequestedBy]; got != user {
		t.Fatalf("annotation %s = %q, want %s", v1alpha2.AnnotationRequestedBy, got, user)
	}
	if got := bd.Annotations[v1alpha2.AnnotationRequestedByGroups]; got != "system:authenticated" {
		t.Fatalf("annotation %s = %q, want system:authenticated", v1alpha2.AnnotationRequestedByGroups, got)
	}
	if v := configMapValue(t, ns, "settings"); v != "from-dana" {
		t.Fatalf("settings = %q, want from-dana", v)
	}
}

// TestSourceSecretOutsideSystemNamespaceIsRefused: a source naming a
// Secret or ConfigMap outside rukpak-system is refused by the API server;
// the same object naming rukpak-system is accepted.
func TestSourceSecretOutsideSystemNamespaceIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name, source string
	}{
		{"image pullSecret", `  - type: image
    image:
      ref: registry.example/bundles/app:v1
      pullSecret: {name: creds, namespace: %s}
`},
		{"configMaps", `  - type: configMaps
    configMaps:
    - configMap: {name: manifests, namespace: %s}
      path: manifests
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := envtest.UniqueName("foreign")
			cleanupBD(t, name)
			bd := func(ns string) string {
				return fmt.Sprintf(`apiVersion: core.rukpak.io/v1alpha2
kind: BundleDeployment
metadata:
  name: %s
spec:
  provisionerClassName: %s
  installNamespace: %s
  sources:
`, name, v1alpha2.ClassPlain, name) + fmt.Sprintf(tc.source, ns)
			}
			out, err := tryKubectl(bd("team-x"), "create", "-f", "-")
			if err == nil {
				t.Fatalf("kubectl create of a source in namespace team-x succeeded:\n%s", out)
			}
			for _, want := range []string{`Invalid value: "team-x"`, "sources read Secrets and ConfigMaps only from rukpak-system"} {
				if !strings.Contains(out, want) {
					t.Fatalf("refusal does not contain %q:\n%s", want, out)
				}
			}
			if err := suite.client.Get(context.Background(), client.ObjectKey{Name: name}, &v1alpha2.BundleDeployment{}); !apierrors.IsNotFound(err) {
				t.Fatalf("refused BundleDeployment %s exists (err %v)", name, err)
			}
			// The refusal is about the namespace: rukpak-system passes.
			if out, err := tryKubectl(bd(v1alpha2.SystemNamespace), "create", "--dry-run=server", "-f", "-"); err != nil {
				t.Fatalf("kubectl create --dry-run=server with namespace %s: %v\n%s", v1alpha2.SystemNamespace, err, out)
			}
		})
	}
}
