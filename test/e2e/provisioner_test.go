package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/sourcetree"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// appSource makes an immutable ConfigMap in rukpak-system holding an
// appspec bundle (one app.yaml).
func appSource(t *testing.T, app string) []v1alpha2.BundleSource {
	t.Helper()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("app"), Namespace: v1alpha2.SystemNamespace},
		Immutable:  ptr.To(true),
		Data:       map[string]string{"app.yaml": app},
	}
	if err := suite.client.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = suite.client.Delete(context.Background(), cm) })
	return []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeConfigMaps, ConfigMaps: []v1alpha2.ConfigMapSource{{ConfigMap: v1alpha2.LocalObjectReference{Name: cm.Name}}}}}
}

// TestExternalProvisioner builds provisioners/appspec — its own module,
// built only on rukpak's pkg/ — runs it next to the manager with
// `rukpakctl local up --provisioner`, and checks that its
// BundleDeployments get the engine's behaviour: installed and Ready, an
// edit reverted, an upgrade that never becomes healthy rolled back; and
// that rukpak's own manager never touched them.
func TestExternalProvisioner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bin := filepath.Join(suite.bin, "appspec-provisioner")
	build := exec.Command("go", "build", "-ldflags=-s -w", "-o", bin, ".")
	build.Dir = filepath.Join(sourcetree.Root(), "provisioners", "appspec")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the appspec provisioner: %v\n%s", err, out)
	}
	if out, err := rukpakctl("local", "up", "--provisioner", bin); err != nil {
		t.Fatalf("rukpakctl local up --provisioner: %v\n%s", err, out)
	}

	name, ns := envtest.UniqueName("appspec"), envtest.UniqueName("appspec")
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: "appspec",
			InstallNamespace:     ns,
			Sources:              appSource(t, "name: web\nimage: registry.k8s.io/pause:3.10\nreplicas: 2\nport: 8080\n"),
			HealthChecks:         &v1alpha2.HealthChecks{ProgressDeadlineSeconds: ptr.To(int32(15))},
		},
	}
	if err := suite.client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = suite.client.Delete(context.Background(), bd) })
	waitReady(t, name, ns)
	if err := suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &corev1.Service{}); err != nil {
		t.Fatalf("the app's Service: %v", err)
	}

	// An edit is reverted.
	deploy := &appsv1.Deployment{}
	if err := suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, deploy); err != nil {
		t.Fatal(err)
	}
	deploy.Spec.Template.Spec.Containers[0].Image = "registry.k8s.io/pause:edited"
	if err := suite.client.Update(ctx, deploy); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 10*time.Second, func() error {
		got := &appsv1.Deployment{}
		if err := suite.client.Get(ctx, client.ObjectKeyFromObject(deploy), got); err != nil {
			return err
		}
		if img := got.Spec.Template.Spec.Containers[0].Image; img != "registry.k8s.io/pause:3.10" {
			return fmt.Errorf("image = %s, want it reverted", img)
		}
		return nil
	})

	// An upgrade whose pods can never be scheduled is rolled back once its
	// progress deadline passes.
	updateSpec(t, name, func(s *v1alpha2.BundleDeploymentSpec) {
		s.Sources = appSource(t, "name: web\nimage: registry.k8s.io/pause:3.10\nreplicas: 2\nport: 8080\nnodeSelector: {disktype: none-has-it}\n")
	})
	envtest.Eventually(t, 90*time.Second, func() error {
		cur := &v1alpha2.BundleDeployment{}
		if err := suite.client.Get(ctx, client.ObjectKey{Name: name}, cur); err != nil {
			return err
		}
		c := meta.FindStatusCondition(cur.Status.Conditions, v1alpha2.TypeInstalled)
		if c == nil || c.Reason != v1alpha2.ReasonRolledBack || c.ObservedGeneration != cur.Generation {
			return fmt.Errorf("Installed = %+v, want RolledBack", c)
		}
		got := &appsv1.Deployment{}
		if err := suite.client.Get(ctx, client.ObjectKeyFromObject(deploy), got); err != nil {
			return err
		}
		if sel := got.Spec.Template.Spec.NodeSelector; len(sel) != 0 {
			return fmt.Errorf("the Deployment still has the failed revision's nodeSelector %v", sel)
		}
		return nil
	})

	// rukpak's own manager left it alone: it never wrote the
	// BundleDeployment or its Bundles, and never logged its name.
	cur := &v1alpha2.BundleDeployment{}
	if err := suite.client.Get(ctx, client.ObjectKey{Name: name}, cur); err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{cur}
	bundles := &v1alpha2.BundleList{}
	if err := suite.client.List(ctx, bundles); err != nil {
		t.Fatal(err)
	}
	for i := range bundles.Items {
		if strings.HasPrefix(bundles.Items[i].Name, name+"-") {
			objs = append(objs, &bundles.Items[i])
		}
	}
	if len(objs) < 3 {
		t.Fatalf("want the BundleDeployment and its two Bundles, found %d objects", len(objs))
	}
	// Writers are named by their binaries (the API server takes the
	// manager's name from the client's user agent).
	for _, o := range objs {
		byProvisioner := false
		for _, mf := range o.GetManagedFields() {
			if mf.Manager == "rukpak" {
				t.Errorf("%T %s was written by rukpak's own manager (%s %s)", o, o.GetName(), mf.Operation, mf.Subresource)
			}
			byProvisioner = byProvisioner || mf.Manager == "appspec-provisioner"
		}
		if _, isBD := o.(*v1alpha2.BundleDeployment); isBD && !byProvisioner {
			t.Errorf("the BundleDeployment's status was not written by appspec-provisioner: %+v", o.GetManagedFields())
		}
	}
	log, err := os.ReadFile(filepath.Join(suite.stateDir, "logs", "rukpak.log"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(log), name) {
		t.Errorf("rukpak's own manager logged about %s", name)
	}
}
