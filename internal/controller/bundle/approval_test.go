//go:build integration

package bundle_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// create creates objs as the admin and deletes them when the test ends.
func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		if err := env.Client.Create(context.Background(), obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	}
}

// manifests creates an immutable ConfigMap in rukpak-system holding one
// plain manifest.
func manifests(t *testing.T) string {
	t.Helper()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("manifests"), Namespace: v1alpha2.SystemNamespace},
		Immutable:  ptr.To(true),
		Data:       map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: b\n"},
	}
	create(t, cm)
	return cm.Name
}

func bundleOf(class, cm string) *v1alpha2.Bundle {
	return &v1alpha2.Bundle{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("bundle")},
		Spec: v1alpha2.BundleSpec{ProvisionerClassName: class, Sources: []v1alpha2.BundleSource{{
			Type:       v1alpha2.SourceTypeConfigMaps,
			ConfigMaps: []v1alpha2.ConfigMapSource{{ConfigMap: v1alpha2.LocalObjectReference{Name: cm}}},
		}}},
	}
}

// waitUnpacked waits until Bundle name's Unpacked condition has status
// and reason, and returns the Bundle.
func waitUnpacked(t *testing.T, name string, status metav1.ConditionStatus, reason string, within time.Duration) *v1alpha2.Bundle {
	t.Helper()
	b := &v1alpha2.Bundle{}
	envtest.Eventually(t, within, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, b); err != nil {
			return err
		}
		c := meta.FindStatusCondition(b.Status.Conditions, v1alpha2.TypeUnpacked)
		if c == nil || c.Status != status || c.Reason != reason {
			return fmt.Errorf("Unpacked = %+v, want %s/%s", c, status, reason)
		}
		return nil
	})
	return b
}

// A Bundle written by a user (not by the manager) is unpacked only while
// that user may use its class and the ConfigMaps and Secrets it names: the
// Bundle controller re-checks before fetching anything. The Bundle names a
// class created only after the user's right is revoked, so that the
// controller first sees it then.
func TestBundleRequesterRecheck(t *testing.T) {
	ctx := context.Background()
	user := envtest.UniqueName("mia")
	class := envtest.UniqueName("late-class")
	cm := manifests(t)
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	create(t,
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{"bundles"}, Verbs: []string{"create", "get"}},
			{APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{"provisionerclasses"}, ResourceNames: []string{class}, Verbs: []string{"use"}},
		}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: v1alpha2.SystemNamespace}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{cm}, Verbs: []string{"use"}},
		}},
	)
	useBinding := func() *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: v1alpha2.SystemNamespace}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user}}
	}
	if err := env.Client.Create(ctx, useBinding()); err != nil {
		t.Fatal(err)
	}
	useCM := &authorizationv1.ResourceAttributes{Verb: "use", Resource: "configmaps", Namespace: v1alpha2.SystemNamespace, Name: cm}
	waitAllowed(t, user, useCM, true)

	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	mia, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	b := bundleOf(class, cm)
	if err := mia.Create(ctx, b); err != nil {
		t.Fatalf("creating the Bundle as %s: %v", user, err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), b) })

	// The right is revoked; then the class appears.
	if err := env.Client.Delete(ctx, useBinding()); err != nil {
		t.Fatal(err)
	}
	waitAllowed(t, user, useCM, false)
	create(t, &v1alpha2.ProvisionerClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Spec: v1alpha2.ProvisionerClassSpec{ControllerName: v1alpha2.ControllerPlain}})

	got := waitUnpacked(t, b.Name, metav1.ConditionFalse, v1alpha2.ReasonNotAuthorized, 30*time.Second)
	msg := meta.FindStatusCondition(got.Status.Conditions, v1alpha2.TypeUnpacked).Message
	for _, want := range []string{
		fmt.Sprintf(`user %q, who created this Bundle`, user),
		fmt.Sprintf(`may not use configmaps %q in namespace "rukpak-system", named by spec.sources[0].configMaps[0].configMap`, cm),
		`grant it with a Role in namespace "rukpak-system" allowing verb "use" on configmaps`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not contain %q", msg, want)
		}
	}
	if got.Status.Phase != v1alpha2.BundlePhaseFailed || got.Status.ContentDigest != "" || len(got.Status.ResolvedSources) != 0 {
		t.Errorf("phase %s, digest %q, resolved %v: want Failed with nothing resolved or unpacked", got.Status.Phase, got.Status.ContentDigest, got.Status.ResolvedSources)
	}

	// The admin grants it again: the next re-check unpacks the Bundle.
	if err := env.Client.Create(ctx, useBinding()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), useBinding()) })
	waitUnpacked(t, b.Name, metav1.ConditionTrue, v1alpha2.ReasonUnpacked, 45*time.Second)
}

// An admin's Bundle (the requester in system:masters) is unpacked.
func TestAdminBundleUnpacked(t *testing.T) {
	b := bundleOf(v1alpha2.ClassPlain, manifests(t))
	create(t, b)
	got := waitUnpacked(t, b.Name, metav1.ConditionTrue, v1alpha2.ReasonUnpacked, 30*time.Second)
	if got.Annotations[v1alpha2.AnnotationRequestedBy] == "" {
		t.Errorf("Bundle has no %s annotation", v1alpha2.AnnotationRequestedBy)
	}
}

func waitAllowed(t *testing.T, user string, attrs *authorizationv1.ResourceAttributes, allowed bool) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 10*time.Second, func() error {
		res, err := cs.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: attrs}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if res.Status.Allowed != allowed {
			return fmt.Errorf("%s may %s %s %s: %v, want %v", user, attrs.Verb, attrs.Resource, attrs.Name, res.Status.Allowed, allowed)
		}
		return nil
	})
}
