package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// diffWeb is a Deployment of the simulated node with replicas and image.
func diffWeb(replicas int, image string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: %d
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      nodeSelector: {type: kwok}
      tolerations:
      - {key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}
      containers:
      - name: web
        image: %s
`, replicas, image)
}

// bdManifest writes bd as a manifest file, as a user keeps it.
func bdManifest(t *testing.T, bd *v1alpha2.BundleDeployment) string {
	t.Helper()
	out := bd.DeepCopy()
	out.TypeMeta = metav1.TypeMeta{APIVersion: v1alpha2.GroupVersion.String(), Kind: v1alpha2.BundleDeploymentKind}
	out.ObjectMeta = metav1.ObjectMeta{Name: bd.Name}
	out.Status = v1alpha2.BundleDeploymentStatus{}
	data, err := yaml.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "bd.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDiff: on an installed BundleDeployment, rukpakctl diff of the spec
// it has installed finds nothing (status 0); of a new spec, it shows the
// Deployment's changed replicas and image and the ConfigMap the new bundle
// drops (status 1), without changing anything; of a file that is not a
// BundleDeployment it fails with status 2 and says why.
func TestDiff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name, ns := envtest.UniqueName("diff"), envtest.UniqueName("diff")
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     ns,
			Sources: source(t, map[string]string{
				"web.yaml": diffWeb(1, "registry.k8s.io/pause:3.9"),
				"old.yaml": configMapYAML("old", "1"),
				"app.yaml": configMapYAML("app", "1"),
			}),
		},
	}
	if err := suite.client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = suite.client.Delete(context.Background(), bd) })
	installed := waitInstalled(t, name)

	t.Run("the installed spec, by name and from a file: no differences", func(t *testing.T) {
		for _, arg := range []string{name, bdManifest(t, installed)} {
			out, err := rukpakctl("diff", arg)
			if code := exitCode(err); code != 0 {
				t.Fatalf("rukpakctl diff %s: exit status %d, want 0:\n%s", arg, code, out)
			}
			if strings.Contains(out, "diff -u -N") {
				t.Errorf("rukpakctl diff %s shows differences:\n%s", arg, out)
			}
		}
	})

	t.Run("a new spec: the changed Deployment and the removed ConfigMap", func(t *testing.T) {
		next := installed.DeepCopy()
		next.Spec.Sources = source(t, map[string]string{
			"web.yaml": diffWeb(3, "registry.k8s.io/pause:3.10"),
			"app.yaml": configMapYAML("app", "1"),
		})
		out, err := rukpakctl("diff", bdManifest(t, next))
		if code := exitCode(err); code != 1 {
			t.Fatalf("exit status %d, want 1:\n%s", code, out)
		}
		for _, want := range []string{
			"diff -u -N live/apps.v1.Deployment." + ns + ".web merged/apps.v1.Deployment." + ns + ".web",
			"\n-  replicas: 1\n+  replicas: 3\n",
			"\n-      - image: registry.k8s.io/pause:3.9\n+      - image: registry.k8s.io/pause:3.10\n",
			"diff -u -N live/v1.ConfigMap." + ns + ".old merged/v1.ConfigMap." + ns + ".old",
			"@@ -1,",
			"\n-kind: ConfigMap\n",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("the diff lacks %q:\n%s", want, out)
			}
		}
		for _, noise := range []string{"managedFields", "resourceVersion", "  generation:", "  uid:", "creationTimestamp", "status:", "ConfigMap." + ns + ".app"} {
			if strings.Contains(out, noise) {
				t.Errorf("the diff shows %q:\n%s", noise, out)
			}
		}
		// Nothing was applied: the cluster still has what it had.
		out, err = rukpakctl("diff", name)
		if code := exitCode(err); code != 0 {
			t.Fatalf("after the diff, rukpakctl diff %s: exit status %d, want 0:\n%s", name, code, out)
		}
	})

	t.Run("a file that is not a BundleDeployment", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "cm.yaml")
		if err := os.WriteFile(path, []byte(configMapYAML("x", "1")), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := rukpakctl("diff", path)
		if code := exitCode(err); code != 2 {
			t.Fatalf("exit status %d, want 2:\n%s", code, out)
		}
		if !strings.Contains(out, "rukpakctl: "+path+" holds no BundleDeployment (apiVersion core.rukpak.io/v1alpha2)") {
			t.Errorf("the message does not say why:\n%s", out)
		}
	})
}
