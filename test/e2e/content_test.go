package e2e

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/contentserver"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// token creates ServiceAccount name in namespace default and returns a
// token for it, for the content server's audience.
func token(t *testing.T, name string) string {
	t.Helper()
	ctx := context.Background()
	cfg, err := clientcmd.BuildConfigFromFlags("", suite.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	if err := suite.client.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{contentserver.Audience}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// TestContentServer downloads a Bundle's content with a token allowed to
// get bundles/content, and is refused (403, naming the permission) with a
// token that is not.
func TestContentServer(t *testing.T) {
	ctx := context.Background()
	name := envtest.UniqueName("content")
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     name,
			Sources:              source(t, map[string]string{"cm.yaml": configMapYAML("served", "1")}),
		},
	}
	if err := suite.client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	bundle := waitInstalled(t, name).Status.ActiveBundle

	reader, nobody := envtest.UniqueName("reader"), envtest.UniqueName("nobody")
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: reader},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{"bundles/content"}, Verbs: []string{"get"}}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: reader},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: reader}},
	}
	if err := suite.client.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	if err := suite.client.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	allowed, denied := token(t, reader), token(t, nobody)

	out := filepath.Join(t.TempDir(), "content.tar.gz")
	// The new binding reaches the authorizer within moments.
	envtest.Eventually(t, 10*time.Second, func() error {
		if log, err := rukpakctl("content", bundle, "--token", allowed, "-o", out); err != nil {
			return fmt.Errorf("rukpakctl content with permission: %w\n%s", err, log)
		}
		return nil
	})
	if files := tarFiles(t, out); !strings.Contains(strings.Join(files, ","), "manifests/cm.yaml") {
		t.Fatalf("downloaded content has %v, want manifests/cm.yaml", files)
	}

	log, err := rukpakctl("content", bundle, "--token", denied, "-o", out)
	if err == nil || !strings.Contains(log, "403") || !strings.Contains(log, "bundles/content") {
		t.Fatalf("rukpakctl content without permission: err %v, want a 403 naming bundles/content:\n%s", err, log)
	}
	log, err = rukpakctl("content", bundle, "--token", "not-a-token", "-o", out)
	if err == nil || !strings.Contains(log, "401") {
		t.Fatalf("rukpakctl content with a bad token: err %v, want 401:\n%s", err, log)
	}
}

func tarFiles(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
}
