package registryv1

import (
	"context"
	"fmt"
	"strings"
	"testing/fstest"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/format"
)

// testCSV describes a ClusterServiceVersion for tests; empty fields take
// the defaults of yaml.
type testCSV struct {
	name        string
	modes       string
	strategy    string
	deployments string
	// install is more of spec.install.spec, as flow YAML lines.
	install string
	// spec is more of spec, as flow YAML lines.
	spec string
	// metadata is more of metadata, as flow YAML lines.
	metadata string
}

// yaml returns the CSV manifest.
func (c testCSV) yaml() string {
	name := or(c.name, "my-op.v1.2.0")
	modes := or(c.modes, "[{type: AllNamespaces, supported: true}, {type: OwnNamespace, supported: true}]")
	strategy := or(c.strategy, "deployment")
	deployments := or(c.deployments, "[{name: op, spec: {selector: {matchLabels: {app: op}}, "+
		"template: {metadata: {labels: {app: op}}, spec: {serviceAccountName: op-sa, containers: [{name: op, image: img}]}}}}]")
	return fmt.Sprintf(`apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: %s
%s
spec:
  installModes: %s
%s
  install:
    strategy: %s
    spec:
      deployments: %s
%s
`, name, indent(c.metadata, 2), modes, indent(c.spec, 2), strategy, deployments, indent(c.install, 6))
}

// or returns s, or def if s is empty.
func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// indent indents each line of s by n spaces.
func indent(s string, n int) string {
	if s == "" {
		return ""
	}
	pad := strings.Repeat(" ", n)
	return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
}

// bundleFS returns a bundle whose files hold the given content.
func bundleFS(files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for name, data := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(data)}
	}
	return fsys
}

// csvBundle returns a bundle holding only c as manifests/csv.yaml.
func csvBundle(c testCSV) fstest.MapFS {
	return bundleFS(map[string]string{"manifests/csv.yaml": c.yaml()})
}

// convert converts fsys installed in namespace "ns" watching watch.
func convert(fsys fstest.MapFS, watch ...string) ([]*unstructured.Unstructured, error) {
	cfg := format.Config{InstallNamespace: "ns", ReleaseName: "release"}
	if watch != nil {
		cfg.Bundle = &v1alpha2.BundleConfig{WatchNamespaces: watch}
	}
	return New().Objects(context.Background(), fsys, cfg)
}

// ids returns "Kind/namespace/name" of each object.
func ids(objs []*unstructured.Unstructured) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
	}
	return out
}
