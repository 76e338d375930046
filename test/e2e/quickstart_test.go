package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/config"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// TestRunWithoutFlags is the quickest path: the admin of the local cluster
// runs `rukpakctl run DIR` with no flags at all, and the directory is
// uploaded and installed (as a BundleDeployment named after it) — the
// token comes from the ServiceAccount `local up` provides, never from the
// kubeconfig. The ClusterRoles the release ships for users are there too.
func TestRunWithoutFlags(t *testing.T) {
	roles, err := config.UserRoles()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range roles {
		if err := suite.client.Get(context.Background(), client.ObjectKey{Name: r.Name}, &rbacv1.ClusterRole{}); err != nil {
			t.Errorf("ClusterRole %s of the release: %v", r.Name, err)
		}
	}

	name := envtest.UniqueName("quick")
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(filepath.Join(dir, "manifests"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifests", "cm.yaml"), []byte(configMapYAML("quick", "v1")), 0o644); err != nil {
		t.Fatal(err)
	}
	cleanupBD(t, name)
	// rukpakctl finds the cluster as a user would: $KUBECONFIG and the
	// state directory of `local up`, no flags.
	out, err := rukpakctl("run", dir)
	if err != nil {
		t.Fatalf("rukpakctl run %s: %v\n%s", dir, err, out)
	}
	for _, want := range []string{"created BundleDeployment " + name, "Installed: True"} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not contain %q:\n%s", want, out)
		}
	}
	waitInstalled(t, name)
	if v := configMapValue(t, name, "quick"); v != "v1" {
		t.Fatalf("ConfigMap %s/quick value %q, want v1", name, v)
	}
}
