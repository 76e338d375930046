//go:build integration

package approval_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

var env *envtest.Env

// TestMain starts a real API server; envtest.Start installs the policies of
// config/policy and waits until they are enforced.
func TestMain(m *testing.M) { envtest.Run(m, &env) }

// as returns a client that impersonates user in groups (the API server adds
// system:authenticated).
func as(t *testing.T, user string, groups ...string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func kube(t *testing.T) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// permission is one thing a test user may be granted.
type permission int

const (
	// editBundleDeployments: create, update, get, list, watch, delete
	// bundledeployments.
	editBundleDeployments permission = iota
	// useClass: use provisionerclasses/core-rukpak-io-plain.
	useClass
	// impersonateInstaller: impersonate serviceaccounts/installer in the
	// test namespace.
	impersonateInstaller
	// impersonateManager: impersonate serviceaccounts/rukpak-manager in
	// rukpak-system.
	impersonateManager
	// useManifests: use configmaps/manifests in rukpak-system, the source
	// of newBD.
	useManifests
	// createBundles: create, get and delete bundles.
	createBundles
	// patchBundles: get, update and patch bundles.
	patchBundles
)

// grant gives user the permissions, as an admin would (docs/security.md),
// and waits until the authorizer sees them. It returns the created
// bindings by permission.
func grant(t *testing.T, ns, user string, perms ...permission) map[permission]client.Object {
	t.Helper()
	ctx := context.Background()
	bindings := map[permission]client.Object{}
	var attrs []*authorizationv1.ResourceAttributes
	for _, p := range perms {
		role, binding, attr := rbacFor(p, ns, user)
		for _, obj := range []client.Object{role, binding} {
			if err := env.Client.Create(ctx, obj); err != nil {
				t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
			}
		}
		bindings[p] = binding
		attrs = append(attrs, attr)
	}
	reviews := kube(t).AuthorizationV1().SubjectAccessReviews()
	for _, attr := range attrs {
		envtest.Eventually(t, 10*time.Second, func() error {
			res, err := reviews.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: user, ResourceAttributes: attr,
			}}, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			if !res.Status.Allowed {
				return fmt.Errorf("%s may not %s %s %s yet", user, attr.Verb, attr.Resource, attr.Name)
			}
			return nil
		})
	}
	return bindings
}

// rbacFor returns a role and binding granting p to user, and a request the
// grant allows.
func rbacFor(p permission, ns, user string) (role, binding client.Object, allowed *authorizationv1.ResourceAttributes) {
	name := envtest.UniqueName(user)
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	group := v1alpha2.GroupVersion.Group
	clusterWide := func(rule rbacv1.PolicyRule) (client.Object, client.Object) {
		return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{rule}},
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: subjects,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}}
	}
	impersonate := func(saNS, sa string) (client.Object, client.Object, *authorizationv1.ResourceAttributes) {
		return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: saNS}, Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"impersonate"}, ResourceNames: []string{sa},
			}}},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: saNS}, Subjects: subjects,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}},
			&authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "serviceaccounts", Namespace: saNS, Name: sa}
	}
	switch p {
	case editBundleDeployments:
		role, binding = clusterWide(rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{"bundledeployments"},
			Verbs: []string{"create", "update", "patch", "get", "list", "watch", "delete"}})
		return role, binding, &authorizationv1.ResourceAttributes{Verb: "create", Group: group, Resource: "bundledeployments"}
	case useClass:
		role, binding = clusterWide(rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{"provisionerclasses"},
			Verbs: []string{"use"}, ResourceNames: []string{v1alpha2.ClassPlain}})
		return role, binding, &authorizationv1.ResourceAttributes{Verb: "use", Group: group, Resource: "provisionerclasses", Name: v1alpha2.ClassPlain}
	case impersonateInstaller:
		return impersonate(ns, "installer")
	case useManifests:
		return useRBAC(name, subjects, "configmaps", "manifests")
	case createBundles:
		role, binding = clusterWide(rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{"bundles"},
			Verbs: []string{"create", "get", "delete"}})
		return role, binding, &authorizationv1.ResourceAttributes{Verb: "create", Group: group, Resource: "bundles"}
	case patchBundles:
		role, binding = clusterWide(rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{"bundles"},
			Verbs: []string{"get", "update", "patch"}})
		return role, binding, &authorizationv1.ResourceAttributes{Verb: "patch", Group: group, Resource: "bundles"}
	default:
		return impersonate(v1alpha2.SystemNamespace, "rukpak-manager")
	}
}

// useRBAC returns a Role in rukpak-system allowing verb use on
// resource/name, its binding to subjects, and the request it allows.
func useRBAC(roleName string, subjects []rbacv1.Subject, resource, name string) (role, binding client.Object, allowed *authorizationv1.ResourceAttributes) {
	ns := v1alpha2.SystemNamespace
	return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: roleName, Namespace: ns}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{resource}, Verbs: []string{"use"}, ResourceNames: []string{name},
		}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: roleName, Namespace: ns}, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: roleName}},
		&authorizationv1.ResourceAttributes{Verb: "use", Resource: resource, Namespace: ns, Name: name}
}

// grantUse lets subject use resource/name in rukpak-system (as
// docs/security.md tells an admin to) and waits until the authorizer sees
// it, for a subject of kind User or Group. It returns the RoleBinding.
func grantUse(t *testing.T, subject rbacv1.Subject, resource, name string) client.Object {
	t.Helper()
	ctx := context.Background()
	role, binding, attr := useRBAC(envtest.UniqueName("use"), []rbacv1.Subject{subject}, resource, name)
	for _, obj := range []client.Object{role, binding} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
	spec := authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: attr}
	if subject.Kind == rbacv1.GroupKind {
		spec.User, spec.Groups = "someone", []string{subject.Name}
	} else {
		spec.User = subject.Name
	}
	waitAllowed(t, spec, true)
	return binding
}

// waitAllowed waits until a SubjectAccessReview of spec answers allowed.
func waitAllowed(t *testing.T, spec authorizationv1.SubjectAccessReviewSpec, allowed bool) {
	t.Helper()
	reviews := kube(t).AuthorizationV1().SubjectAccessReviews()
	envtest.Eventually(t, 10*time.Second, func() error {
		res, err := reviews.Create(context.Background(), &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if res.Status.Allowed != allowed {
			return fmt.Errorf("%s %v: allowed %v, want %v", spec.User, spec.ResourceAttributes, res.Status.Allowed, allowed)
		}
		return nil
	})
}

func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

func groupSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
}

// newBD returns (does not create) a plain BundleDeployment installing into
// ns as serviceAccount sa ("" for none).
func newBD(ns, sa string) *v1alpha2.BundleDeployment {
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("bd")},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     ns,
			Sources: []v1alpha2.BundleSource{{
				Type:       v1alpha2.SourceTypeConfigMaps,
				ConfigMaps: []v1alpha2.ConfigMapSource{{ConfigMap: v1alpha2.LocalObjectReference{Name: "manifests"}, Path: "manifests"}},
			}},
		},
	}
	if sa != "" {
		bd.Spec.ServiceAccount = &v1alpha2.ServiceAccountReference{Name: sa}
	}
	return bd
}

// wantDenied fails unless err is a refusal whose message contains every
// part.
func wantDenied(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("request admitted, want it refused")
	}
	t.Logf("refused: %v", err)
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not contain %q", err, p)
		}
	}
}

func annotations(t *testing.T, name string) map[string]string {
	t.Helper()
	bd := &v1alpha2.BundleDeployment{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
		t.Fatal(err)
	}
	return bd.Annotations
}
