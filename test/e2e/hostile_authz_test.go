package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/refs"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// Attacks on other teams' Secrets and ConfigMaps in rukpak-system, and on
// the Bundle API: a team member may name only the Secrets and ConfigMaps
// they may `use` (admission policy rukpak-install-authorization, and the
// manager's re-check before anything is fetched).

// credentialTrap is an HTTP server on loopback that records every request
// and any credential it carries.
type credentialTrap struct {
	srv *httptest.Server

	mu       sync.Mutex
	requests int
	creds    []string
}

func newCredentialTrap(t *testing.T) *credentialTrap {
	t.Helper()
	trap := &credentialTrap{}
	trap.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		trap.mu.Lock()
		defer trap.mu.Unlock()
		trap.requests++
		if a := r.Header.Get("Authorization"); a != "" {
			trap.creds = append(trap.creds, a)
		}
		if u, p, ok := r.BasicAuth(); ok {
			trap.creds = append(trap.creds, u+":"+p)
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(trap.srv.Close)
	return trap
}

// untouched fails the test if the trap received any request.
func (trap *credentialTrap) untouched(t *testing.T) {
	t.Helper()
	trap.mu.Lock()
	defer trap.mu.Unlock()
	if trap.requests != 0 || len(trap.creds) != 0 {
		t.Fatalf("the attacker's server received %d requests, credentials %q", trap.requests, trap.creds)
	}
}

// victimSecret creates another team's Secret in rukpak-system holding
// HTTP credentials, and returns its name.
func victimSecret(t *testing.T) string {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("victim-creds"), Namespace: v1alpha2.SystemNamespace},
		StringData: map[string]string{"username": "victim", "password": "s3cret-of-another-team", "token": "victim-token"},
	}
	createOwned(t, s)
	return s.Name
}

// victimConfigMap creates another team's immutable ConfigMap in
// rukpak-system and returns its name.
func victimConfigMap(t *testing.T) string {
	t.Helper()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("victim-values"), Namespace: v1alpha2.SystemNamespace},
		Immutable:  ptr.To(true),
		Data:       map[string]string{"values.yaml": "password: of-another-team\n"},
	}
	createOwned(t, cm)
	return cm.Name
}

// useRefusal is what the admission policy and the re-check say when user
// may not use resource name, named by field.
func useRefusal(user, resource, name, field string) []string {
	return []string{
		fmt.Sprintf(`user %q`, user),
		fmt.Sprintf(`may not use %s %q in namespace "rukpak-system", named by %s`, resource, name, field),
		fmt.Sprintf(`grant it with a Role in namespace "rukpak-system" allowing verb "use" on %s (apiGroups [""]) with resourceNames [%q]`, resource, name),
	}
}

// admissionAttack creates the BundleDeployment spec makes (naming the
// victim's object, created by victim) as the team, and expects the
// admission policy to refuse it naming the object and field. As a
// control, the same spec naming an object of the same kind that an admin
// let the team use is admitted (a dry run).
func admissionAttack(class, resource, field string, victim func(*testing.T) string, spec func(team *hostileTeam, victim string) []v1alpha2.BundleSource, config func(victim string) *v1alpha2.BundleConfig) func(*testing.T, *hostileTeam) func(*testing.T) {
	return func(t *testing.T, team *hostileTeam) func(*testing.T) {
		build := func(name string) *v1alpha2.BundleDeployment {
			bd := team.bd(envtest.UniqueName("borrow"), class, spec(team, name))
			if config != nil {
				bd.Spec.Config = config(name)
			}
			return bd
		}
		own := build(victim(t))
		team.allowReferences(t, own.Spec.Sources, own.Spec.Config)
		ownErr := team.client.Create(context.Background(), own, client.DryRunAll)

		name := victim(t)
		bd := build(name)
		cleanupBD(t, bd.Name)
		err := team.client.Create(context.Background(), bd)
		return func(t *testing.T) {
			if ownErr != nil {
				t.Fatalf("control: the same spec naming an object the team may use was refused: %v", ownErr)
			}
			if !apierrors.IsForbidden(err) {
				t.Fatalf("create = %v, want Forbidden by the admission policy", err)
			}
			errContains(t, err, append(useRefusal(team.user, resource, name, field), "rukpak-install-authorization")...)
		}
	}
}

// grantTo creates a ClusterRole (or a Role in namespace ns) with rules and
// binds it to user; objects are deleted when the test ends. It returns the
// binding.
func grantTo(t *testing.T, user, ns string, rules ...rbacv1.PolicyRule) client.Object {
	t.Helper()
	name := envtest.UniqueName("authz")
	subjects := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}
	if ns == "" {
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}}
		createOwned(t, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, binding)
		return binding
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Subjects: subjects,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}}
	createOwned(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Rules: rules}, binding)
	return binding
}

// waitAllowed waits until a SubjectAccessReview for user (in groups)
// answers allowed.
func waitAllowed(t *testing.T, user string, groups []string, attrs authorizationv1.ResourceAttributes, allowed bool) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", suite.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 10*time.Second, func() error {
		res, err := cs.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &attrs}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if res.Status.Allowed != allowed {
			return fmt.Errorf("%s may %s %s %s: %v, want %v", user, attrs.Verb, attrs.Resource, attrs.Name, res.Status.Allowed, allowed)
		}
		return nil
	})
}

// allowReferences lets the team use every Secret and ConfigMap that
// sources and config name, as an admin does for the objects it puts in
// rukpak-system for a team (docs/security.md), and waits until the
// authorizer sees it. The grant is removed when the test ends. Attacks
// whose own configMaps source (ownSource) must be admitted call it before
// the team creates their BundleDeployment.
func (team *hostileTeam) allowReferences(t *testing.T, sources []v1alpha2.BundleSource, config *v1alpha2.BundleConfig) {
	t.Helper()
	list := refs.Distinct(refs.List(sources, config))
	if len(list) == 0 {
		return
	}
	var rules []rbacv1.PolicyRule
	for _, r := range list {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{string(r.Resource)}, ResourceNames: []string{r.Name}, Verbs: []string{"use"}})
	}
	grantTo(t, team.user, v1alpha2.SystemNamespace, rules...)
	for _, r := range list {
		waitAllowed(t, team.user, []string{team.ns}, authorizationv1.ResourceAttributes{
			Verb: "use", Resource: string(r.Resource), Namespace: v1alpha2.SystemNamespace, Name: r.Name}, true)
	}
}

func httpWithAuth(url, secret string) []v1alpha2.BundleSource {
	return []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeHTTP, HTTP: &v1alpha2.HTTPSource{
		URL: url, Auth: &v1alpha2.HTTPAuth{Secret: v1alpha2.LocalObjectReference{Name: secret}},
	}}}
}

var _ = registerHostile(
	// The verified attack of issue 12: an http source at the attacker's
	// server with another team's Secret as its credentials.
	hostileCase{
		name: "http source borrows another team's auth Secret",
		attack: func(t *testing.T, team *hostileTeam) func(*testing.T) {
			trap := newCredentialTrap(t)
			secret := victimSecret(t)
			bd := team.bd(envtest.UniqueName("borrow"), v1alpha2.ClassPlain, httpWithAuth(trap.srv.URL+"/bundle.tgz", secret))
			cleanupBD(t, bd.Name)
			err := team.client.Create(context.Background(), bd)
			return func(t *testing.T) {
				if !apierrors.IsForbidden(err) {
					t.Fatalf("create = %v, want Forbidden by the admission policy", err)
				}
				errContains(t, err, append(useRefusal(team.user, "secrets", secret, "spec.sources[0].http.auth.secret"), "rukpak-install-authorization")...)
				trap.untouched(t)
			}
		},
	},
	// The same BundleDeployment, admitted while its author may use the
	// Secret, reaches the manager only after that right is revoked: the
	// re-check refuses it before any source is resolved, so the
	// credential is never sent. The manager first sees it when its class
	// appears (created by the admin after the revocation), so the order is
	// certain.
	hostileCase{
		name: "http auth Secret whose use was revoked before the manager acts",
		attack: func(t *testing.T, team *hostileTeam) func(*testing.T) {
			ctx := context.Background()
			trap := newCredentialTrap(t)
			secret := victimSecret(t)
			class := envtest.UniqueName("late-plain")
			grantTo(t, team.user, "", rbacv1.PolicyRule{APIGroups: []string{v1alpha2.GroupVersion.Group},
				Resources: []string{"provisionerclasses"}, ResourceNames: []string{class}, Verbs: []string{"use"}})
			use := grantTo(t, team.user, v1alpha2.SystemNamespace, rbacv1.PolicyRule{APIGroups: []string{""},
				Resources: []string{"secrets"}, ResourceNames: []string{secret}, Verbs: []string{"use"}})
			useSecret := authorizationv1.ResourceAttributes{Verb: "use", Resource: "secrets", Namespace: v1alpha2.SystemNamespace, Name: secret}
			groups := []string{team.ns, "system:authenticated"}
			waitAllowed(t, team.user, groups, useSecret, true)
			waitAllowed(t, team.user, groups, authorizationv1.ResourceAttributes{Verb: "use", Group: v1alpha2.GroupVersion.Group, Resource: "provisionerclasses", Name: class}, true)

			// The class goes after the BundleDeployment (its uninstall
			// needs the class).
			pc := &v1alpha2.ProvisionerClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Spec: v1alpha2.ProvisionerClassSpec{ControllerName: v1alpha2.ControllerPlain}}
			t.Cleanup(func() {
				if err := suite.client.Delete(context.Background(), pc); err != nil && !apierrors.IsNotFound(err) {
					t.Errorf("deleting ProvisionerClass %s: %v", class, err)
				}
			})
			bd := team.bd(envtest.UniqueName("revoked"), class, httpWithAuth(trap.srv.URL+"/bundle.tgz", secret))
			cleanupBD(t, bd.Name)
			if err := team.client.Create(ctx, bd); err != nil {
				t.Fatalf("creating BundleDeployment %s as %s while allowed: %v", bd.Name, team.user, err)
			}

			if err := suite.client.Delete(ctx, use); err != nil {
				t.Fatalf("revoking use of the Secret: %v", err)
			}
			waitAllowed(t, team.user, groups, useSecret, false)
			if err := suite.client.Create(ctx, pc); err != nil {
				t.Fatalf("creating ProvisionerClass %s: %v", class, err)
			}
			return func(t *testing.T) {
				conditionMessage(t, bd.Name, v1alpha2.TypeInstalled, v1alpha2.ReasonNotAuthorized,
					useRefusal(team.user, "secrets", secret, "spec.sources[0].http.auth.secret")...)
				got := &v1alpha2.BundleDeployment{}
				if err := suite.client.Get(context.Background(), client.ObjectKey{Name: bd.Name}, got); err != nil {
					t.Fatal(err)
				}
				if len(got.Status.ResolvedSources) != 0 || got.Status.ActiveBundle != "" {
					t.Fatalf("refused BundleDeployment resolved %v, active bundle %q", got.Status.ResolvedSources, got.Status.ActiveBundle)
				}
				trap.untouched(t)
			}
		},
	},
	hostileCase{
		name: "git https source borrows another team's auth Secret",
		attack: admissionAttack(v1alpha2.ClassPlain, "secrets", "spec.sources[0].git.auth.secret", victimSecret,
			func(_ *hostileTeam, secret string) []v1alpha2.BundleSource {
				return []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeGit, Git: &v1alpha2.GitSource{
					Repository: "https://127.0.0.1:1/attacker.git", Ref: v1alpha2.GitRef{Branch: "main"},
					Auth: &v1alpha2.GitAuth{Secret: v1alpha2.LocalObjectReference{Name: secret}},
				}}}
			}, nil),
	},
	hostileCase{
		name: "image source borrows another team's pull Secret",
		attack: admissionAttack(v1alpha2.ClassPlain, "secrets", "spec.sources[0].image.pullSecret", victimSecret,
			func(_ *hostileTeam, secret string) []v1alpha2.BundleSource {
				return []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeImage, Image: &v1alpha2.ImageSource{
					Ref:        "127.0.0.1:1/attacker/bundle:latest",
					PullSecret: &v1alpha2.LocalObjectReference{Name: secret},
				}}}
			}, nil),
	},
	hostileCase{
		name: "Helm valuesFrom reads another team's Secret",
		attack: admissionAttack(v1alpha2.ClassHelm, "secrets", "spec.config.valuesFrom[0]", victimSecret,
			func(_ *hostileTeam, _ string) []v1alpha2.BundleSource {
				return []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeUpload, Upload: &v1alpha2.UploadSource{
					Digest: "sha256:" + strings.Repeat("0", 64)}}}
			}, func(secret string) *v1alpha2.BundleConfig {
				return &v1alpha2.BundleConfig{ValuesFrom: []v1alpha2.ValuesReference{{Kind: "Secret", Name: secret, Key: "password"}}}
			}),
	},
	hostileCase{
		name: "configMaps source reads another team's ConfigMap",
		attack: admissionAttack(v1alpha2.ClassPlain, "configmaps", "spec.sources[0].configMaps[0].configMap", victimConfigMap,
			func(_ *hostileTeam, cm string) []v1alpha2.BundleSource {
				return []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeConfigMaps, ConfigMaps: []v1alpha2.ConfigMapSource{
					{ConfigMap: v1alpha2.LocalObjectReference{Name: cm}},
				}}}
			}, nil),
	},
	// A team an admin allowed to create Bundles writes one naming another
	// team's Secret: the same checks apply to Bundles.
	hostileCase{
		name: "Bundle written directly with another team's Secret",
		attack: func(t *testing.T, team *hostileTeam) func(*testing.T) {
			trap := newCredentialTrap(t)
			secret := victimSecret(t)
			grantTo(t, team.user, "", rbacv1.PolicyRule{APIGroups: []string{v1alpha2.GroupVersion.Group},
				Resources: []string{"bundles"}, Verbs: []string{"create", "get", "delete"}})
			waitAllowed(t, team.user, []string{team.ns}, authorizationv1.ResourceAttributes{Verb: "create", Group: v1alpha2.GroupVersion.Group, Resource: "bundles"}, true)
			b := &v1alpha2.Bundle{
				ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("planted")},
				Spec: v1alpha2.BundleSpec{ProvisionerClassName: v1alpha2.ClassPlain,
					Sources: httpWithAuth(trap.srv.URL+"/bundle.tgz", secret)},
			}
			err := team.client.Create(context.Background(), b)
			if err == nil {
				t.Cleanup(func() { _ = suite.client.Delete(context.Background(), b) })
			}
			return func(t *testing.T) {
				if !apierrors.IsForbidden(err) {
					t.Fatalf("create Bundle = %v, want Forbidden by the admission policy", err)
				}
				errContains(t, err, append(useRefusal(team.user, "secrets", secret, "spec.sources[0].http.auth.secret"), "rukpak-install-authorization")...)
				trap.untouched(t)
			}
		},
	},
	// Without that grant, a team cannot write Bundles at all (RBAC: only
	// the manager may).
	hostileCase{
		name: "Bundle written by a team not allowed to create Bundles",
		attack: func(t *testing.T, team *hostileTeam) func(*testing.T) {
			b := &v1alpha2.Bundle{
				ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("planted")},
				Spec: v1alpha2.BundleSpec{ProvisionerClassName: v1alpha2.ClassPlain, Sources: []v1alpha2.BundleSource{{
					Type: v1alpha2.SourceTypeUpload, Upload: &v1alpha2.UploadSource{Digest: "sha256:" + strings.Repeat("0", 64)}}}},
			}
			err := team.client.Create(context.Background(), b)
			if err == nil {
				t.Cleanup(func() { _ = suite.client.Delete(context.Background(), b) })
			}
			return func(t *testing.T) {
				if !apierrors.IsForbidden(err) {
					t.Fatalf("create Bundle = %v, want Forbidden by RBAC", err)
				}
				errContains(t, err, fmt.Sprintf(`User %q cannot create resource "bundles"`, team.user))
			}
		},
	},
)
