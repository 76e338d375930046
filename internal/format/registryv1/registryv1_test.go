package registryv1

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/rukpak/rukpak/pkg/failure"
	"github.com/rukpak/rukpak/pkg/format"
)

func TestSelectInstallMode(t *testing.T) {
	tests := []struct {
		name        string
		watch       []string
		wantMode    InstallMode
		wantTargets []string
	}{
		{"nothing watches all namespaces", nil, AllNamespaces, []string{""}},
		{"empty list watches all namespaces", []string{}, AllNamespaces, []string{""}},
		{"the install namespace", []string{"ns"}, OwnNamespace, []string{"ns"}},
		{"one other namespace", []string{"team-a"}, SingleNamespace, []string{"team-a"}},
		{"several namespaces, sorted", []string{"team-b", "team-a"}, MultiNamespace, []string{"team-a", "team-b"}},
		{"several with the install namespace", []string{"ns", "team-a"}, MultiNamespace, []string{"ns", "team-a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mode, targets, err := SelectInstallMode("ns", tt.watch)
			if err != nil {
				t.Fatal(err)
			}
			if mode != tt.wantMode || !slices.Equal(targets, tt.wantTargets) {
				t.Errorf("SelectInstallMode() = %s, %q; want %s, %q", mode, targets, tt.wantMode, tt.wantTargets)
			}
		})
	}
}

func TestObjectsTargetNamespacesAnnotation(t *testing.T) {
	modes := "[{type: AllNamespaces, supported: true}, {type: OwnNamespace, supported: true}, " +
		"{type: SingleNamespace, supported: true}, {type: MultiNamespace, supported: true}]"
	tests := []struct {
		watch     []string
		want      string
		wantRoles []string
	}{
		{nil, "", []string{"ClusterRole/"}},
		{[]string{"ns"}, "ns", []string{"Role/ns"}},
		{[]string{"a"}, "a", []string{"Role/a"}},
		{[]string{"b", "a"}, "a,b", []string{"Role/a", "Role/b"}},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			objs, err := convert(csvBundle(testCSV{modes: modes, install: "permissions: [{serviceAccountName: op-sa, rules: []}]"}), tt.watch...)
			if err != nil {
				t.Fatal(err)
			}
			var roles []string
			for _, o := range objs {
				switch o.GetKind() {
				case "Deployment":
					got, _, _ := unstructured.NestedString(o.Object, "spec", "template", "metadata", "annotations", TargetNamespacesAnnotation)
					if got != tt.want {
						t.Errorf("%s = %q, want %q", TargetNamespacesAnnotation, got, tt.want)
					}
				case "Role", "ClusterRole":
					roles = append(roles, o.GetKind()+"/"+o.GetNamespace())
				}
			}
			if !slices.Equal(roles, tt.wantRoles) {
				t.Errorf("roles = %q, want %q", roles, tt.wantRoles)
			}
		})
	}
}

func TestObjectsServiceAccounts(t *testing.T) {
	fsys := bundleFS(map[string]string{
		"manifests/csv.yaml": testCSV{install: "permissions:\n" +
			"- {serviceAccountName: listed, rules: []}\n" +
			"- {serviceAccountName: default, rules: []}\n" +
			"clusterPermissions: [{serviceAccountName: listed, rules: [{apiGroups: [''], resources: [nodes], verbs: [get]}]}]",
		}.yaml(),
		"manifests/sa.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: listed}\n",
	})
	objs, err := convert(fsys)
	if err != nil {
		t.Fatal(err)
	}
	var sas []string
	for _, o := range objs {
		if o.GetKind() == "ServiceAccount" {
			sas = append(sas, o.GetNamespace()+"/"+o.GetName())
		}
	}
	// listed comes from the manifests (no namespace); op-sa, the
	// deployment's, is generated; default is not.
	if want := []string{"/listed", "ns/op-sa"}; !slices.Equal(sas, want) {
		t.Errorf("ServiceAccounts = %q, want %q", sas, want)
	}
}

func TestObjectsOrderAndIdenticalGrants(t *testing.T) {
	fsys := bundleFS(map[string]string{
		"manifests/a_cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
		"manifests/b_crd.yaml": "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n" +
			"metadata: {name: things.example.com}\n",
		"manifests/c_csv.yaml": testCSV{install: "permissions: [{serviceAccountName: op-sa, rules: []}]\n" +
			"clusterPermissions: [{serviceAccountName: op-sa, rules: []}]"}.yaml(),
		"manifests/d_role.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: viewer}\n",
	})
	objs, err := convert(fsys)
	if err != nil {
		t.Fatal(err)
	}
	got := ids(objs)
	// The same empty rules for op-sa as permissions (AllNamespaces) and as
	// clusterPermissions make one ClusterRole.
	role := roleName("my-op.v1.2.0", "op-sa", "ClusterRole", []any{})
	want := []string{
		"CustomResourceDefinition//things.example.com",
		"ServiceAccount/ns/op-sa",
		"ClusterRole//viewer",
		"ClusterRole//" + role,
		"ClusterRoleBinding//" + role,
		"ConfigMap//c",
		"Deployment/ns/op",
	}
	if !slices.Equal(got, want) {
		t.Errorf("objects =\n%q\nwant\n%q", got, want)
	}
}

func TestRoleNames(t *testing.T) {
	long := "op-" + strings.Repeat("x", 190) + ".v1.0.0"
	if len(long) != 200 {
		t.Fatalf("test CSV name has %d characters", len(long))
	}
	c := testCSV{
		name:  long,
		modes: "[{type: MultiNamespace, supported: true}]",
		install: "permissions: [{serviceAccountName: " + strings.Repeat("s", 100) + ", rules: [{apiGroups: [''], resources: [pods], verbs: [get]}]}," +
			" {serviceAccountName: " + strings.Repeat("s", 100) + ", rules: [{apiGroups: [''], resources: [pods], verbs: [list]}]}]\n" +
			"clusterPermissions: [{serviceAccountName: op-sa, rules: []}]",
	}
	run := func() []string {
		objs, err := convert(csvBundle(c), "team-a", "team-b")
		if err != nil {
			t.Fatal(err)
		}
		return ids(objs)
	}
	first, second := run(), run()
	if !slices.Equal(first, second) {
		t.Fatalf("names differ between runs:\n%q\n%q", first, second)
	}
	seen := map[string]bool{}
	for _, id := range first {
		parts := strings.SplitN(id, "/", 3)
		kind, name := parts[0], parts[2]
		if kind == "ServiceAccount" || kind == "Deployment" {
			continue
		}
		if len(name) > 63 {
			t.Errorf("%s has %d characters, want at most 63", id, len(name))
		}
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			t.Errorf("%s: %v", id, errs)
		}
		if seen[id] {
			t.Errorf("%s generated twice", id)
		}
		seen[id] = true
	}
	if len(seen) != 2+2*2*2 {
		t.Errorf("got %d roles and bindings, want 10: %q", len(seen), first)
	}
}

func TestObjectsMetadata(t *testing.T) {
	tests := []struct {
		name string
		fsys fstest.MapFS
	}{
		{"no metadata at all", csvBundle(testCSV{})},
		{"annotations without the format keys", bundleFS(map[string]string{
			"manifests/csv.yaml":        testCSV{}.yaml(),
			"metadata/annotations.yaml": "annotations:\n  operators.operatorframework.io.bundle.package.v1: my-op\n",
		})},
		{"empty annotations file", bundleFS(map[string]string{
			"manifests/csv.yaml": testCSV{}.yaml(), "metadata/annotations.yaml": "",
		})},
		{"custom manifests directory", bundleFS(map[string]string{
			"deploy/olm/csv.yaml":       testCSV{}.yaml(),
			"manifests/ignored.yaml":    "not: [read",
			"metadata/annotations.yaml": "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  operators.operatorframework.io.bundle.manifests.v1: deploy/olm/\n",
		})},
		{"kustomization at the root is not built", bundleFS(map[string]string{
			"manifests/csv.yaml": testCSV{}.yaml(),
			"kustomization.yaml": "resources: [missing.yaml]\n",
		})},
		{"no dependencies", bundleFS(map[string]string{
			"manifests/csv.yaml": testCSV{}.yaml(), "metadata/dependencies.yaml": "dependencies: []\n",
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := convert(tt.fsys)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(objs); !slices.Contains(got, "Deployment/ns/op") {
				t.Errorf("objects = %q, want Deployment op", got)
			}
		})
	}
}

func TestManifestsView(t *testing.T) {
	fsys := bundleFS(map[string]string{
		"deploy/a.yaml":     "a",
		"deploy/sub/b.yaml": "b",
		"other/c.yaml":      "c",
	})
	if err := fstest.TestFS(manifestsView{fsys: fsys, dir: "deploy"}, "manifests/a.yaml", "manifests/sub/b.yaml"); err != nil {
		t.Fatal(err)
	}
	if _, err := (manifestsView{fsys: fsys, dir: "deploy"}).Open("other/c.yaml"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open(other/c.yaml) error = %v, want not exist", err)
	}
}

func TestObjectsCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := New().Objects(ctx, csvBundle(testCSV{}), format.Config{InstallNamespace: "ns"})
	if !errors.Is(err, context.Canceled) || failure.As(err) != nil {
		t.Fatalf("error = %v, want context.Canceled, not a terminal failure", err)
	}
}

// TestObjectsShippedWebhookService: a bundle that ships the webhook
// Service under the name OLM generates (<deployment>-service, as
// opentelemetry-operator and kubernetes-imagepuller-operator in the
// community catalog do) installs as OLM leaves it: the generated Service
// replaces the shipped one, and everything else is as without it. A
// shipped certificate Secret of the generated name is replaced too.
func TestObjectsShippedWebhookService(t *testing.T) {
	dir := filepath.Join("testdata", "bundles", "webhook-operator")
	base := fstest.MapFS{}
	err := fs.WalkDir(os.DirFS(dir), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(os.DirFS(dir), p)
		base[p] = &fstest.MapFile{Data: data}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want, err := convert(base)
	if err != nil {
		t.Fatal(err)
	}
	shipped := maps.Clone(base)
	shipped["manifests/webhook-service.yaml"] = &fstest.MapFile{Data: []byte(`apiVersion: v1
kind: Service
metadata:
  name: webhook-operator-controller-manager-service
spec:
  ports: [{port: 443, protocol: TCP, targetPort: 9443}]
  selector: {control-plane: controller-manager}
`)}
	shipped["manifests/webhook-cert.yaml"] = &fstest.MapFile{Data: []byte(`apiVersion: v1
kind: Secret
metadata: {name: webhook-operator-controller-manager-service-cert, namespace: ns}
type: kubernetes.io/tls
`)}
	got, err := convert(shipped)
	if err != nil {
		t.Fatalf("Objects() error = %v, want the shipped Service and Secret replaced", err)
	}
	if !reflect.DeepEqual(ids(got), ids(want)) {
		t.Fatalf("objects = %v, want %v", ids(got), ids(want))
	}
	for i := range got {
		if !reflect.DeepEqual(got[i].Object, want[i].Object) {
			t.Fatalf("%s differs from the bundle without the shipped objects:\n%v\nwant\n%v", ids(got)[i], got[i].Object, want[i].Object)
		}
	}
}

// TestObjectsCSVOfAnyAPIVersion: the CSV is found by kind, as OLM finds
// it; the community catalog publishes bundles whose CSV has another
// apiVersion (service-binding-operator 1.4.0, k8gb 0.11.4).
func TestObjectsCSVOfAnyAPIVersion(t *testing.T) {
	want, err := convert(csvBundle(testCSV{}))
	if err != nil {
		t.Fatal(err)
	}
	for _, apiVersion := range []string{"binding.operators.coreos.com/v1alpha1", "v1alpha1"} {
		t.Run(apiVersion, func(t *testing.T) {
			csv := strings.Replace(testCSV{}.yaml(), "apiVersion: operators.coreos.com/v1alpha1", "apiVersion: "+apiVersion, 1)
			got, err := convert(bundleFS(map[string]string{"manifests/csv.yaml": csv}))
			if err != nil {
				t.Fatalf("Objects() error = %v", err)
			}
			if !reflect.DeepEqual(ids(got), ids(want)) {
				t.Fatalf("objects = %v, want %v", ids(got), ids(want))
			}
		})
	}
}
