//go:build integration

package bundledeployment_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// engineVerbs are what rukpak does to the objects it manages.
var engineVerbs = []string{"create", "delete", "get", "list", "patch", "watch"}

// installer creates ServiceAccount installer in ns with a Role allowing
// the engine's verbs on ConfigMaps and Deployments there, and returns its
// name.
func installer(t *testing.T, ns string) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "installer", Namespace: ns}}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "installer", Namespace: ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: engineVerbs},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: engineVerbs},
	}}
	for _, obj := range []client.Object{sa, role, roleBinding(ns, "installer", "Role", "installer", saSubject(ns, "installer"))} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
	return sa.Name
}

func saSubject(ns, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}
}

func roleBinding(ns, name, kind, role string, subject rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role}, Subjects: []rbacv1.Subject{subject}}
}

func deploymentYAML(name string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %s
spec:
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec:
      containers: [{name: web, image: example.com/web:1}]
`, name, name, name)
}

const adminBindingYAML = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: %s
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: installer, namespace: %s}]
`

// saBD creates a BundleDeployment installing cm into ns as ServiceAccount sa.
func saBD(t *testing.T, c client.Client, ns, cm, sa string) *v1alpha2.BundleDeployment {
	t.Helper()
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("sa")},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     ns,
			ServiceAccount:       &v1alpha2.ServiceAccountReference{Name: sa},
			Sources:              source(cm),
		},
	}
	if err := c.Create(context.Background(), bd); err != nil {
		t.Fatalf("creating BundleDeployment: %v", err)
	}
	return bd
}

// touch sets the retry annotation, which makes the controller reconcile
// without a spec change.
func touch(t *testing.T, name string) {
	t.Helper()
	updateBD(t, name, func(bd *v1alpha2.BundleDeployment) {
		if bd.Annotations == nil {
			bd.Annotations = map[string]string{}
		}
		bd.Annotations[v1alpha2.AnnotationRetry] = time.Now().Format(time.RFC3339Nano)
	})
}

// waitReason waits until Installed has reason (for the current
// generation), touching the BundleDeployment now and then so that refusals
// rechecked on a timer are seen sooner, and returns the condition.
func waitReason(t *testing.T, name string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	t.Helper()
	var c *metav1.Condition
	last := time.Now()
	envtest.Eventually(t, 30*time.Second, func() error {
		if time.Since(last) > 2*time.Second {
			touch(t, name)
			last = time.Now()
		}
		bd := &v1alpha2.BundleDeployment{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
			return err
		}
		c = meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled)
		if c == nil || c.Status != status || c.Reason != reason || c.ObservedGeneration != bd.Generation {
			return fmt.Errorf("Installed = %+v, want %s/%s", c, status, reason)
		}
		return nil
	})
	return c
}

func TestServiceAccountBoundsTheInstall(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "team")
	sa := installer(t, ns)
	v1 := manifests(t, map[string]string{"app.yaml": cmYAML("settings", "1") + "---\n" + deploymentYAML("web")})
	bd := saBD(t, env.Client, ns, v1, sa)
	waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &appsv1.Deployment{}); err != nil {
		t.Fatalf("Deployment web: %v", err)
	}

	// Drift is seen through the ServiceAccount's own namespaced watch.
	if err := env.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 20*time.Second, func() error {
		_, err := configMapData(t, ns, "settings")
		return err
	})

	// A revision that binds the ServiceAccount to cluster-admin needs
	// permissions it does not have: refused, nothing of it applied.
	crb := envtest.UniqueName("escalate")
	v2 := manifests(t, map[string]string{"app.yaml": cmYAML("settings", "2") + "---\n" + cmYAML("extra", "2") + "---\n" +
		deploymentYAML("web") + "---\n" + fmt.Sprintf(adminBindingYAML, crb, ns)})
	updateBD(t, bd.Name, func(bd *v1alpha2.BundleDeployment) { bd.Spec.Sources = source(v2) })
	c := waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonMissingPermissions)
	msg := meta.FindStatusCondition(c.Status.Conditions, v1alpha2.TypeInstalled).Message
	for _, want := range []string{"ServiceAccount " + ns + "/installer", "clusterrolebindings", "rbac.authorization.k8s.io", "ClusterRole", "remains installed"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("message %q does not name %q", msg, want)
		}
	}
	mustNotExist(t, &rbacv1.ClusterRoleBinding{}, "", crb)
	mustNotExist(t, &corev1.ConfigMap{}, ns, "extra")
	if data, err := configMapData(t, ns, "settings"); err != nil || data["value"] != "1" {
		t.Fatalf("settings = %v, %v; want the first revision's value 1", data, err)
	}
	// While it waits for an admin, the installed revision is kept.
	if err := env.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 20*time.Second, func() error {
		data, err := configMapData(t, ns, "settings")
		if err == nil && data["value"] != "1" {
			return fmt.Errorf("settings = %v, want the first revision's", data)
		}
		return err
	})

	// Allowed to manage ClusterRoleBindings, it still cannot grant what it
	// does not hold: the API server's escalation check refuses the
	// dry-run, and nothing is applied.
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("bindings")}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterrolebindings"}, Verbs: engineVerbs}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: cr.Name},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name}, Subjects: []rbacv1.Subject{saSubject(ns, sa)}}
	for _, obj := range []client.Object{cr, binding} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	cond := waitReasonWithMessage(t, bd.Name, v1alpha2.ReasonMissingPermissions, "forbidden")
	if !strings.Contains(cond.Message, crb) {
		t.Fatalf("message %q does not name the ClusterRoleBinding %s", cond.Message, crb)
	}
	mustNotExist(t, &rbacv1.ClusterRoleBinding{}, "", crb)
	mustNotExist(t, &corev1.ConfigMap{}, ns, "extra")

	// Uninstalled as the ServiceAccount too.
	if err := env.Client.Delete(ctx, bd); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 20*time.Second, func() error {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "settings"}, &corev1.ConfigMap{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("settings still there: %v", err)
		}
		return nil
	})
}

// waitReasonWithMessage waits until Installed is False with reason and a
// message containing want.
func waitReasonWithMessage(t *testing.T, name, reason, want string) *metav1.Condition {
	t.Helper()
	var c *metav1.Condition
	envtest.Eventually(t, 40*time.Second, func() error {
		c = waitReason(t, name, metav1.ConditionFalse, reason)
		if !strings.Contains(c.Message, want) {
			touch(t, name)
			return fmt.Errorf("message %q does not contain %q yet", c.Message, want)
		}
		return nil
	})
	return c
}

func TestRequesterIsCheckedAgain(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "team")
	sa := installer(t, ns)
	carol := "carol-" + envtest.UniqueName("u")
	user := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: carol}
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: carol}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{"bundledeployments"}, Verbs: []string{"create", "get", "list", "watch", "update", "patch", "delete"}},
		{APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{"provisionerclasses"}, ResourceNames: []string{v1alpha2.ClassPlain}, Verbs: []string{"use"}},
	}}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: carol},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: carol}, Subjects: []rbacv1.Subject{user}}
	imp := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "impersonate-installer", Namespace: ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, ResourceNames: []string{sa}, Verbs: []string{"impersonate"}}}}
	rb := roleBinding(ns, "carol-impersonates", "Role", imp.Name, user)
	for _, obj := range []client.Object{cr, crb, imp, rb} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: carol}
	asCarol, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	cm := manifests(t, map[string]string{"app.yaml": cmYAML("settings", "1")})
	// An admin lets carol use her source ConfigMap.
	useCM := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: carol + "-uses-" + cm, Namespace: v1alpha2.SystemNamespace}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{cm}, Verbs: []string{"use"}}}}
	for _, obj := range []client.Object{useCM, roleBinding(v1alpha2.SystemNamespace, useCM.Name, "Role", useCM.Name, user)} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	bd := saBD(t, asCarol, ns, cm, sa)
	got := waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	if got.Annotations[v1alpha2.AnnotationRequestedBy] != carol {
		t.Fatalf("requested-by = %q, want %s", got.Annotations[v1alpha2.AnnotationRequestedBy], carol)
	}

	// Carol loses the right to impersonate the ServiceAccount: the next
	// reconcile refuses to act on her request.
	if err := env.Client.Delete(ctx, rb); err != nil {
		t.Fatal(err)
	}
	c := waitReason(t, bd.Name, metav1.ConditionFalse, v1alpha2.ReasonNotAuthorized)
	for _, want := range []string{carol, "impersonate", sa, ns} {
		if !strings.Contains(c.Message, want) {
			t.Fatalf("message %q does not name %q", c.Message, want)
		}
	}
}
