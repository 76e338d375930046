package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha1"
	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// readmeExamples are the two examples of the original RukPak README, as
// they are written there (the image reference aside).
const readmeExamples = `apiVersion: core.rukpak.io/v1alpha1
kind: Bundle
metadata:
  name: my-bundle
spec:
  source:
    type: image
    image:
      ref: my-bundle@sha256:xyz123
  provisionerClassName: core-rukpak-io-plain
---
apiVersion: core.rukpak.io/v1alpha1
kind: BundleDeployment
metadata:
  name: my-bundle-deployment
spec:
  provisionerClassName: core-rukpak-io-plain
  template:
    metadata:
      labels:
        app: my-bundle
    spec:
      source:
        type: image
        image:
          ref: my-bundle@sha256:xyz123
      provisionerClassName: core-rukpak-io-plain
`

// TestReadmeV1alpha1Examples applies the original README's v1alpha1
// Bundle and BundleDeployment with kubectl, unchanged but for the image
// (one built for the test in a local registry): the Bundle unpacks, the
// BundleDeployment installs the image's manifests, and kubectl lists them
// as v1alpha1 (converted by rukpak's webhook) and as v1alpha2.
func TestReadmeV1alpha1Examples(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	host := startRegistry(t)
	cmName := envtest.UniqueName("readme")
	digest := pushImage(t, host+"/readme/my-bundle:v1", map[string]string{
		"manifests/configmap.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  from: the original README\n", cmName),
	})
	file := filepath.Join(t.TempDir(), "readme.yaml")
	manifest := strings.ReplaceAll(readmeExamples, "my-bundle@sha256:xyz123", host+"/readme/my-bundle@"+digest)
	if err := os.WriteFile(file, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	out := kubectl(t, "apply", "-f", file)
	if !strings.Contains(out, "bundle.core.rukpak.io/my-bundle created") || !strings.Contains(out, "bundledeployment.core.rukpak.io/my-bundle-deployment created") {
		t.Fatalf("kubectl apply:\n%s", out)
	}
	t.Cleanup(func() { kubectl(t, "delete", "--ignore-not-found", "--wait=false", "-f", file) })

	envtest.Eventually(t, 2*time.Minute, func() error {
		bd := &v1alpha2.BundleDeployment{}
		if err := suite.client.Get(ctx, client.ObjectKey{Name: "my-bundle-deployment"}, bd); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != bd.Generation {
			return fmt.Errorf("Installed = %+v", c)
		}
		cm := &corev1.ConfigMap{}
		if err := suite.client.Get(ctx, client.ObjectKey{Namespace: v1alpha1.DefaultInstallNamespace, Name: cmName}, cm); err != nil {
			return err
		}
		b := &v1alpha1.Bundle{}
		if err := suite.client.Get(ctx, client.ObjectKey{Name: "my-bundle"}, b); err != nil {
			return err
		}
		if b.Status.Phase != string(v1alpha2.BundlePhaseUnpacked) {
			return fmt.Errorf("Bundle my-bundle phase %q", b.Status.Phase)
		}
		return nil
	})
	got := &v1alpha1.BundleDeployment{}
	if err := suite.client.Get(ctx, client.ObjectKey{Name: "my-bundle-deployment"}, got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Template.Metadata.Labels["app"] != "my-bundle" || got.Status.ActiveBundle == "" {
		t.Fatalf("as v1alpha1: template %+v, activeBundle %q", got.Spec.Template, got.Status.ActiveBundle)
	}
	list := kubectl(t, "get", "bundledeployments.v1alpha1.core.rukpak.io")
	if !strings.Contains(list, "my-bundle-deployment") {
		t.Fatalf("kubectl get bundledeployments.v1alpha1.core.rukpak.io:\n%s", list)
	}
	if list := kubectl(t, "get", "bundles.v1alpha1.core.rukpak.io", "my-bundle", "-o", "jsonpath={.spec.source.image.ref}"); !strings.Contains(list, digest) {
		t.Fatalf("the v1alpha1 Bundle's image: %q", list)
	}
}
