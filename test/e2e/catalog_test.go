package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// pingBundle is a registry+v1 bundle of package pkg at version: a CSV
// whose one Deployment runs image ping:<version>.
func pingBundle(pkg, version string) map[string]string {
	return map[string]string{
		"metadata/annotations.yaml": "annotations:\n" +
			"  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n" +
			"  operators.operatorframework.io.bundle.manifests.v1: manifests/\n" +
			"  operators.operatorframework.io.bundle.metadata.v1: metadata/\n" +
			"  operators.operatorframework.io.bundle.package.v1: " + pkg + "\n",
		"manifests/ping.clusterserviceversion.yaml": `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: ` + pkg + `.v` + version + `
spec:
  version: ` + version + `
  installModes:
  - {type: AllNamespaces, supported: true}
  install:
    strategy: deployment
    spec:
      deployments:
      - name: ping
        spec:
          selector:
            matchLabels: {app: ping}
          template:
            metadata:
              labels: {app: ping}
            spec:
              containers:
              - {name: ping, image: "registry.example/ping:` + version + `"}
`,
	}
}

// catalogFBC is a File-Based Catalog of package pkg with bundles 1.0.0
// and 1.1.0 in channel stable, 1.1.0 replacing 1.0.0 only when edge.
func catalogFBC(t *testing.T, host, pkg string, edge bool) string {
	t.Helper()
	type obj = map[string]any
	entry11 := obj{"name": pkg + ".v1.1.0"}
	if edge {
		entry11["replaces"] = pkg + ".v1.0.0"
	}
	blobs := []obj{
		{"schema": "olm.package", "name": pkg, "defaultChannel": "stable"},
		{"schema": "olm.channel", "package": pkg, "name": "stable", "entries": []obj{{"name": pkg + ".v1.0.0"}, entry11}},
	}
	for _, v := range []string{"1.0.0", "1.1.0"} {
		blobs = append(blobs, obj{"schema": "olm.bundle", "package": pkg, "name": pkg + ".v" + v,
			"image":      fmt.Sprintf("%s/bundles/%s:%s", host, pkg, v),
			"properties": []obj{{"type": "olm.package", "value": obj{"packageName": pkg, "version": v}}}})
	}
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	for _, b := range blobs {
		if err := enc.Encode(b); err != nil {
			t.Fatal(err)
		}
	}
	return sb.String()
}

// TestCatalogFollowsUpgradeEdges installs a package from a File-Based
// Catalog on a registry on loopback, as OLM v1 resolves it: a newer
// version in range that no upgrade edge leads to from the installed one
// is not taken; once the catalog publishes the edge, it is, within the
// poll interval.
func TestCatalogFollowsUpgradeEdges(t *testing.T) {
	t.Parallel()
	// Each lookup of the catalog asks for its manifest: the count says a
	// resolve ran (a lookup that finds the same pins writes no status).
	var catalogLookups atomic.Int64
	reg := registry.New()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/catalogs/") && strings.Contains(r.URL.Path, "/manifests/") {
			catalogLookups.Add(1)
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	pkg := envtest.UniqueName("ping")
	for _, v := range []string{"1.0.0", "1.1.0"} {
		pushImage(t, fmt.Sprintf("%s/bundles/%s:%s", host, pkg, v), pingBundle(pkg, v))
	}
	catalog := host + "/catalogs/ping:latest"
	pushImage(t, catalog, map[string]string{"configs/catalog.json": catalogFBC(t, host, pkg, false)})

	name := envtest.UniqueName("catalog")
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassRegistry, InstallNamespace: name,
			PollInterval: &metav1.Duration{Duration: v1alpha2.MinPollInterval},
			Sources: []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeCatalog, Catalog: &v1alpha2.CatalogSource{
				Image: catalog, Package: pkg, Channels: []string{"stable"}, Version: "1.0.x"}}},
		},
	}
	if err := suite.client.Create(context.Background(), bd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = suite.client.Delete(context.Background(), bd) })
	waitInstalled(t, name)
	if img := pingImage(t, name); img != "registry.example/ping:1.0.0" {
		t.Fatalf("installed %s, want ping 1.0.0", img)
	}

	// The range now takes 1.1.0, but no edge leads to it from 1.0.0: the
	// resolve keeps 1.0.0, however often it runs.
	updateSpec(t, name, func(s *v1alpha2.BundleDeploymentSpec) { s.Sources[0].Catalog.Version = "1.x" })
	installed := waitInstalled(t, name)
	// Two more lookups: at least one after the one the spec change made.
	lookups := catalogLookups.Load()
	envtest.Eventually(t, 3*v1alpha2.MinPollInterval+30*time.Second, func() error {
		if n := catalogLookups.Load(); n < lookups+2 {
			return fmt.Errorf("the catalog was looked up %d times since, want 2", n-lookups)
		}
		return nil
	})
	if img := pingImage(t, name); img != "registry.example/ping:1.0.0" {
		t.Fatalf("took %s, which no upgrade edge leads to", img)
	}
	if got := getBD(t, name).Status.ActiveBundle; got != installed.Status.ActiveBundle {
		t.Fatalf("active revision %s, was %s", got, installed.Status.ActiveBundle)
	}

	// The catalog publishes 1.1.0 replacing 1.0.0: it is installed.
	pushImage(t, catalog, map[string]string{"configs/catalog.json": catalogFBC(t, host, pkg, true)})
	envtest.Eventually(t, 3*v1alpha2.MinPollInterval+60*time.Second, func() error {
		if img := pingImage(t, name); img != "registry.example/ping:1.1.0" {
			return fmt.Errorf("runs %s, want ping 1.1.0", img)
		}
		return nil
	})
	waitStatus(t, name, 30*time.Second, func(bd *v1alpha2.BundleDeployment) error {
		if rs := bd.Status.ResolvedSources; len(rs) != 1 || rs[0].Catalog == nil || rs[0].Catalog.ResolvedVersion != "1.1.0" {
			return fmt.Errorf("status.resolvedSources = %+v", rs)
		}
		return nil
	})
}

// pingImage is the image the ping Deployment of BundleDeployment name
// runs ("" before there is one).
func pingImage(t *testing.T, name string) string {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := suite.client.Get(context.Background(), client.ObjectKey{Namespace: name, Name: "ping"}, d); err != nil {
		return ""
	}
	return d.Spec.Template.Spec.Containers[0].Image
}
