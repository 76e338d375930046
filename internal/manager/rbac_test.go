//go:build integration

package manager_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/manager"
	"github.com/rukpak/rukpak/internal/sourcetree"
	"github.com/rukpak/rukpak/pkg/envtest"
)

var env *envtest.Env

func TestMain(m *testing.M) { envtest.Run(m, &env) }

// TestManagerRunsWithItsOwnRBAC runs the manager as its ServiceAccount,
// bound only to the roles of config/rbac, and installs, corrects drift on
// and deletes a bundle as a team's ServiceAccount: the manager's own RBAC
// is enough, and it cannot install as itself.
func TestManagerRunsWithItsOwnRBAC(t *testing.T) {
	ctx := context.Background()
	c := env.Client
	kube := kubernetes.NewForConfigOrDie(env.Config)

	// The manager's identity: its ServiceAccount and config/rbac.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "rukpak-manager", Namespace: v1alpha2.SystemNamespace}}
	if err := c.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"role.yaml", "role_binding.yaml"} {
		for _, obj := range decodeAll(t, filepath.Join(sourcetree.Root(), "config", "rbac", file)) {
			if err := c.Create(ctx, obj); err != nil {
				t.Fatalf("creating %s %s from %s: %v", obj.GetKind(), obj.GetName(), file, err)
			}
		}
	}
	tok, err := kube.CoreV1().ServiceAccounts(sa.Namespace).CreateToken(ctx, sa.Name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{Host: env.Config.Host, BearerToken: tok.Status.Token, QPS: 200, Burst: 400,
		TLSClientConfig: rest.TLSClientConfig{CAData: env.Config.CAData}}

	// It may not read what bundles contain.
	review, err := kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:rukpak-system:rukpak-manager",
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:rukpak-system", "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Resource: "secrets", Namespace: "default"}}}, metav1.CreateOptions{})
	if err != nil || review.Status.Allowed {
		t.Fatalf("the manager may list Secrets in default (%v): its RBAC is too wide", err)
	}

	dir := t.TempDir()
	opts := manager.DefaultOptions()
	opts.StorageDir = dir
	opts.HealthProbeBindAddress = "0"
	opts.MetricsBindAddress = "0"
	mgr, err := manager.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	// A team's namespace, installer and bundle.
	ns := env.Namespace(t, "team")
	verbs := []string{"create", "delete", "get", "list", "patch", "watch"}
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "installer", Namespace: ns}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "installer", Namespace: ns},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: verbs}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "installer", Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "installer"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "installer", Namespace: ns}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "team-bundle", Namespace: v1alpha2.SystemNamespace}, Immutable: ptr.To(true),
			Data: map[string]string{"app.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  greeting: hi\n"}},
	} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	sources := []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeConfigMaps,
		ConfigMaps: []v1alpha2.ConfigMapSource{{ConfigMap: v1alpha2.LocalObjectReference{Name: "team-bundle"}, Path: "manifests"}}}}
	bd := &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("team")}, Spec: v1alpha2.BundleDeploymentSpec{
		ProvisionerClassName: v1alpha2.ClassPlain, InstallNamespace: ns,
		ServiceAccount: &v1alpha2.ServiceAccountReference{Name: "installer"}, Sources: sources}}
	asManager := &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("no-sa")}, Spec: v1alpha2.BundleDeploymentSpec{
		ProvisionerClassName: v1alpha2.ClassPlain, InstallNamespace: ns, Sources: sources}}
	for _, obj := range []client.Object{bd, asManager} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	waitInstalled(t, bd.Name, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	waitInstalled(t, asManager.Name, metav1.ConditionFalse, v1alpha2.ReasonServiceAccountRequired)

	// Drift is corrected, through the installer's namespaced watch.
	settings := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: ns}}
	if err := c.Delete(ctx, settings); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 20*time.Second, func() error {
		return c.Get(ctx, client.ObjectKeyFromObject(settings), &corev1.ConfigMap{})
	})

	// Uninstalled as the installer.
	if err := c.Delete(ctx, bd); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 20*time.Second, func() error {
		err := c.Get(ctx, client.ObjectKeyFromObject(bd), &v1alpha2.BundleDeployment{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("BundleDeployment still there: %v", err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(settings), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("settings still there: %v", err)
		}
		return nil
	})
}

func waitInstalled(t *testing.T, name string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	envtest.Eventually(t, 30*time.Second, func() error {
		bd := &v1alpha2.BundleDeployment{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
			return err
		}
		c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled)
		if c == nil || c.Status != status || c.Reason != reason {
			return fmt.Errorf("Installed = %+v, want %s/%s", c, status, reason)
		}
		return nil
	})
}

// decodeAll reads the YAML documents of path.
func decodeAll(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(string(doc)) == "" || strings.TrimSpace(string(doc)) == "---" {
			continue
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(obj.Object) > 0 {
			out = append(out, obj)
		}
	}
}
