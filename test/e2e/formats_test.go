package e2e

import (
	"context"
	"fmt"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/chartrepotest"
	"github.com/rukpak/rukpak/internal/sourcetree"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// dirFiles reads every regular file under dir into path → content, with
// prefix before each path.
func dirFiles(t *testing.T, dir, prefix string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files[prefix+filepath.ToSlash(rel)] = string(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// fixture is a path under the repository root.
func fixture(parts ...string) string {
	return filepath.Join(append([]string{sourcetree.Root()}, parts...)...)
}

// pushHelmChart pushes the chart directory dir to ref as an OCI Helm chart
// artifact (helm push's media types) and returns its digest.
func pushHelmChart(t *testing.T, ref, dir string) string {
	t.Helper()
	chartName := filepath.Base(dir)
	return pushHelmChartArchive(t, ref, chartrepotest.TarGz(t, dirFiles(t, dir, chartName+"/")))
}

// pushHelmChartArchive pushes a packaged chart (a .tgz, as helm package or
// helm pull makes it) to ref as an OCI Helm chart and returns its digest.
func pushHelmChartArchive(t *testing.T, ref string, data []byte) string {
	t.Helper()
	layer := static.NewLayer(data, "application/vnd.cncf.helm.chart.content.v1.tar+gzip")
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{Layer: layer})
	if err != nil {
		t.Fatal(err)
	}
	img = mutate.ConfigMediaType(img, "application/vnd.cncf.helm.config.v1+json")
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// startRegistry serves an OCI registry on loopback for the test.
func startRegistry(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(registry.New())
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// createFormatBD creates a BundleDeployment of class from an image.
func createFormatBD(t *testing.T, bdName, class, ns, ref string, cfg *v1alpha2.BundleConfig) {
	t.Helper()
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: bdName},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: class,
			InstallNamespace:     ns,
			Sources: []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeImage,
				Image: &v1alpha2.ImageSource{Ref: ref, InsecureSkipTLSVerify: true}}},
			Config: cfg,
		},
	}
	if err := suite.client.Create(context.Background(), bd); err != nil {
		t.Fatal(err)
	}
	// A test that failed half-way says what the BundleDeployment went
	// through, and leaves nothing for the next test to collide with
	// (cluster-scoped objects of the same bundle, its CRDs).
	t.Cleanup(func() {
		if t.Failed() {
			describeBD(t, bdName)
		}
		removeBD(t, bdName)
	})
}

// describeBD logs bdName's conditions and events.
func describeBD(t *testing.T, bdName string) {
	t.Helper()
	ctx := context.Background()
	bd := &v1alpha2.BundleDeployment{}
	if err := suite.client.Get(ctx, client.ObjectKey{Name: bdName}, bd); err != nil {
		t.Logf("bd/%s: %v", bdName, err)
		return
	}
	t.Logf("bd/%s generation %d, active %s", bdName, bd.Generation, bd.Status.ActiveBundle)
	for _, c := range bd.Status.Conditions {
		t.Logf("  %s", conditionString(c))
	}
	events := &eventsv1.EventList{}
	if err := suite.client.List(ctx, events, client.MatchingFields{"regarding.name": bdName}); err != nil {
		t.Logf("events of bd/%s: %v", bdName, err)
		return
	}
	sort.Slice(events.Items, func(i, j int) bool {
		return events.Items[i].CreationTimestamp.Before(&events.Items[j].CreationTimestamp)
	})
	for _, e := range events.Items {
		t.Logf("  %s %s %s ×%d: %s", e.CreationTimestamp.Format(time.TimeOnly), e.Type, e.Reason, max(e.DeprecatedCount, 1), e.Note)
	}
}

// removeBD deletes bdName if it still exists and waits until it is gone.
func removeBD(t *testing.T, bdName string) {
	t.Helper()
	bd := &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: bdName}}
	if err := suite.client.Delete(context.Background(), bd); apierrors.IsNotFound(err) {
		return
	} else if err != nil {
		t.Error(err)
		return
	}
	waitGone(t, &v1alpha2.BundleDeployment{}, "", bdName)
}

// waitGone waits until obj no longer exists.
func waitGone(t *testing.T, obj client.Object, ns, objName string) {
	t.Helper()
	envtest.Eventually(t, 60*time.Second, func() error {
		err := suite.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: objName}, obj)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("%T %s/%s still exists (err %v)", obj, ns, objName, err)
	})
}

// deleteBD deletes the BundleDeployment and waits until it is gone.
func deleteBD(t *testing.T, bdName string) {
	t.Helper()
	bd := &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: bdName}}
	if err := suite.client.Delete(context.Background(), bd); err != nil {
		t.Fatal(err)
	}
	waitGone(t, &v1alpha2.BundleDeployment{}, "", bdName)
}

// TestFormatExamples installs the Helm and registry+v1 examples the way the
// README does, checks what they generate, upgrades the Helm values, and
// deletes both.
func TestFormatExamples(t *testing.T) {
	ctx := context.Background()
	kubectl(t, "apply", "-f", fixture("examples", "helm-webapp.yaml"), "-f", fixture("examples", "registry-operator.yaml"))
	kubectl(t, "wait", "--for=condition=Installed", "bd/webapp", "bd/memo-operator", "--timeout=60s")
	waitAvailable(t, "webapp", "webapp", 2)
	waitAvailable(t, "memo-system", "memo-operator", 1)

	// Helm: values reached the objects.
	if v := configMapData(t, "webapp", "webapp-config")["MESSAGE"]; v != "hello from rukpak" {
		t.Fatalf("webapp-config MESSAGE = %q, want the value from spec.config.values", v)
	}
	// registry+v1 in OwnNamespace mode: the CSV's permissions are a Role
	// and RoleBinding in the watched namespace, its clusterPermissions a
	// ClusterRole and ClusterRoleBinding, all for the operator's account.
	owned := client.MatchingLabels{v1alpha2.LabelOwnerName: "memo-operator"}
	roles := &rbacv1.RoleList{}
	if err := suite.client.List(ctx, roles, client.InNamespace("memo-system"), owned); err != nil || len(roles.Items) != 1 {
		t.Fatalf("Roles in memo-system: %d (err %v), want 1", len(roles.Items), err)
	}
	bindings := &rbacv1.RoleBindingList{}
	if err := suite.client.List(ctx, bindings, client.InNamespace("memo-system"), owned); err != nil || len(bindings.Items) != 1 {
		t.Fatalf("RoleBindings in memo-system: %d (err %v), want 1", len(bindings.Items), err)
	}
	if s := bindings.Items[0].Subjects; len(s) != 1 || s[0].Name != "memo-operator" || s[0].Namespace != "memo-system" {
		t.Fatalf("RoleBinding subjects = %+v, want ServiceAccount memo-system/memo-operator", s)
	}
	crbs := &rbacv1.ClusterRoleBindingList{}
	if err := suite.client.List(ctx, crbs, owned); err != nil || len(crbs.Items) != 1 {
		t.Fatalf("ClusterRoleBindings: %d (err %v), want 1", len(crbs.Items), err)
	}
	if err := suite.client.Get(ctx, client.ObjectKey{Namespace: "memo-system", Name: "memo-operator"}, &corev1.ServiceAccount{}); err != nil {
		t.Fatalf("ServiceAccount: %v", err)
	}
	d := &appsv1.Deployment{}
	if err := suite.client.Get(ctx, client.ObjectKey{Namespace: "memo-system", Name: "memo-operator"}, d); err != nil {
		t.Fatal(err)
	}
	if got := d.Spec.Template.Annotations["olm.targetNamespaces"]; got != "memo-system" {
		t.Fatalf("olm.targetNamespaces = %q, want memo-system", got)
	}

	// A values change is an upgrade.
	kubectl(t, "patch", "bd", "webapp", "--type=merge", "-p", `{"spec":{"config":{"values":{"replicaCount":3,"message":"v2"}}}}`)
	waitAvailable(t, "webapp", "webapp", 3)
	envtest.Eventually(t, 30*time.Second, func() error {
		if v := configMapData(t, "webapp", "webapp-config")["MESSAGE"]; v != "v2" {
			return fmt.Errorf("MESSAGE = %q, want v2", v)
		}
		return nil
	})

	// Deleting the operator keeps its CRD (deletionPolicy.crds: Keep, the
	// default), released: installing the example again takes the same
	// CRD back, labelled for the new BundleDeployment, instead of
	// refusing it as a stale owner's. (TestExamplesStayHealthy installs
	// it a third time.)
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := suite.client.Get(ctx, client.ObjectKey{Name: "memos.example.com"}, crd); err != nil {
		t.Fatal(err)
	}
	first := &v1alpha2.BundleDeployment{}
	if err := suite.client.Get(ctx, client.ObjectKey{Name: "memo-operator"}, first); err != nil {
		t.Fatal(err)
	}
	deleteBD(t, "webapp")
	deleteBD(t, "memo-operator")
	waitGone(t, &appsv1.Deployment{}, "webapp", "webapp")
	waitGone(t, &appsv1.Deployment{}, "memo-system", "memo-operator")
	waitGone(t, &rbacv1.ClusterRoleBinding{}, "", crbs.Items[0].Name)
	kept := &apiextensionsv1.CustomResourceDefinition{}
	if err := suite.client.Get(ctx, client.ObjectKey{Name: crd.Name}, kept); err != nil || kept.UID != crd.UID {
		t.Fatalf("CRD %s after the delete: %v (uid %s); want it kept", crd.Name, err, kept.UID)
	}
	kubectl(t, "apply", "-f", fixture("examples", "registry-operator.yaml"))
	again := waitInstalled(t, "memo-operator")
	waitAvailable(t, "memo-system", "memo-operator", 1)
	if err := suite.client.Get(ctx, client.ObjectKey{Name: crd.Name}, kept); err != nil {
		t.Fatal(err)
	}
	if kept.UID != crd.UID || kept.Labels[v1alpha2.LabelOwnerUID] != string(again.UID) || again.UID == first.UID {
		t.Fatalf("CRD %s: uid %s labelled for %s; want the kept CRD (%s) taken over by the new memo-operator (%s)",
			crd.Name, kept.UID, kept.Labels[v1alpha2.LabelOwnerUID], crd.UID, again.UID)
	}
	deleteBD(t, "memo-operator")
	waitGone(t, &appsv1.Deployment{}, "memo-system", "memo-operator")
}

// TestRegistryV1FromImage installs an operator bundle image in
// AllNamespaces mode, upgrades it to a version that drops one of its two
// Deployments (pruned), refuses an install mode the CSV does not support
// while the installed version keeps running, and deletes it.
func TestRegistryV1FromImage(t *testing.T) {
	ctx := context.Background()
	host := startRegistry(t)
	bundles := fixture("internal", "format", "registryv1", "testdata", "bundles")
	pushImage(t, host+"/operators/e2e-operator:v1", dirFiles(t, filepath.Join(bundles, "e2e-operator"), ""))
	pushImage(t, host+"/operators/e2e-operator:v2", dirFiles(t, filepath.Join(bundles, "e2e-operator-v2"), ""))

	name, ns := envtest.UniqueName("operator"), envtest.UniqueName("operator")
	createFormatBD(t, name, v1alpha2.ClassRegistry, ns, host+"/operators/e2e-operator:v1", nil)
	waitInstalled(t, name)
	waitAvailable(t, ns, "op-manager", 1)
	waitAvailable(t, ns, "op-metrics", 1)
	d := &appsv1.Deployment{}
	if err := suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "op-manager"}, d); err != nil {
		t.Fatal(err)
	}
	if v, ok := d.Spec.Template.Annotations["olm.targetNamespaces"]; !ok || v != "" {
		t.Fatalf("olm.targetNamespaces = %q (set %v), want \"\" for AllNamespaces", v, ok)
	}
	// AllNamespaces: the CSV's permissions become cluster-wide, bound to
	// the operator's ServiceAccount in the install namespace.
	crbs := &rbacv1.ClusterRoleBindingList{}
	if err := suite.client.List(ctx, crbs, client.MatchingLabels{v1alpha2.LabelOwnerName: name}); err != nil {
		t.Fatal(err)
	}
	if len(crbs.Items) == 0 {
		t.Fatal("no ClusterRoleBindings installed")
	}
	for _, b := range crbs.Items {
		if len(b.Subjects) != 1 || b.Subjects[0].Kind != "ServiceAccount" || b.Subjects[0].Namespace != ns {
			t.Fatalf("ClusterRoleBinding %s subjects = %+v, want a ServiceAccount in %s", b.Name, b.Subjects, ns)
		}
		if err := suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: b.Subjects[0].Name}, &corev1.ServiceAccount{}); err != nil {
			t.Fatalf("ServiceAccount of ClusterRoleBinding %s: %v", b.Name, err)
		}
	}

	// v2 drops op-metrics: pruned once v2 is installed.
	updateSpec(t, name, func(s *v1alpha2.BundleDeploymentSpec) { s.Sources[0].Image.Ref = host + "/operators/e2e-operator:v2" })
	waitGone(t, &appsv1.Deployment{}, ns, "op-metrics")
	waitInstalled(t, name)
	waitAvailable(t, ns, "op-manager", 1)
	if err := suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "op-manager"}, d); err != nil {
		t.Fatal(err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "registry.example/op:2" {
		t.Fatalf("op-manager image %s, want registry.example/op:2", img)
	}

	// MultiNamespace is not supported by the CSV: refused, v2 stays.
	updateSpec(t, name, func(s *v1alpha2.BundleDeploymentSpec) {
		s.Config = &v1alpha2.BundleConfig{WatchNamespaces: []string{"team-a", "team-b"}}
	})
	bd := waitCondition(t, name, v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonUnsupportedInstallMode)
	msg := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled).Message
	if !strings.Contains(msg, "MultiNamespace") || !strings.Contains(msg, "AllNamespaces") {
		t.Fatalf("message %q should name the refused mode and the supported ones", msg)
	}
	if err := suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "op-manager"}, d); err != nil {
		t.Fatalf("the installed version must stay: %v", err)
	}

	deleteBD(t, name)
	waitGone(t, &appsv1.Deployment{}, ns, "op-manager")
	waitGone(t, &rbacv1.ClusterRoleBinding{}, "", crbs.Items[0].Name)
}

// TestHelmChartFromOCI installs a Helm chart pushed to a registry as an OCI
// chart artifact, with values from a Secret and from the spec, then
// upgrades by changing the Secret (worker disabled: pruned) and the spec
// (replicas), and deletes it.
func TestHelmChartFromOCI(t *testing.T) {
	ctx := context.Background()
	host := startRegistry(t)
	pushHelmChart(t, host+"/charts/e2e-app:0.1.0", fixture("internal", "format", "helm", "testdata", "charts", "e2e-app"))

	name, ns := envtest.UniqueName("chart"), envtest.UniqueName("chart")
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-values", Namespace: v1alpha2.SystemNamespace},
		StringData: map[string]string{"values.yaml": "config:\n  greeting: from-secret\n"},
	}
	if err := suite.client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	values := `{"replicas": 2, "nodeSelector": {"type": "kwok"},
		"tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}]}`
	createFormatBD(t, name, v1alpha2.ClassHelm, ns, "oci://"+host+"/charts/e2e-app:0.1.0", &v1alpha2.BundleConfig{
		ValuesFrom: []v1alpha2.ValuesReference{{Kind: "Secret", Name: secret.Name}},
		Values:     &apiextensionsv1.JSON{Raw: []byte(values)},
	})
	waitInstalled(t, name)
	waitAvailable(t, ns, name, 2)
	waitAvailable(t, ns, name+"-worker", 1)
	if v := configMapData(t, ns, name+"-config")["greeting"]; v != "from-secret" {
		t.Fatalf("greeting = %q, want the value from the Secret", v)
	}

	// Changing the Secret is an upgrade; the worker it disables is pruned.
	secret.StringData = map[string]string{"values.yaml": "config:\n  greeting: v2\nworker:\n  enabled: false\n"}
	if err := suite.client.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	waitGone(t, &appsv1.Deployment{}, ns, name+"-worker")
	envtest.Eventually(t, 30*time.Second, func() error {
		if v := configMapData(t, ns, name+"-config")["greeting"]; v != "v2" {
			return fmt.Errorf("greeting = %q, want v2", v)
		}
		return nil
	})

	updateSpec(t, name, func(s *v1alpha2.BundleDeploymentSpec) {
		s.Config.Values = &apiextensionsv1.JSON{Raw: []byte(strings.Replace(values, `"replicas": 2`, `"replicas": 3`, 1))}
	})
	waitAvailable(t, ns, name, 3)
	waitInstalled(t, name)

	deleteBD(t, name)
	waitGone(t, &appsv1.Deployment{}, ns, name)
	waitGone(t, &corev1.ConfigMap{}, ns, name+"-config")
}

// configMapData returns the data of ConfigMap ns/name, nil when it cannot
// be read.
func configMapData(t *testing.T, ns, name string) map[string]string {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := suite.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
		return nil
	}
	return cm.Data
}
