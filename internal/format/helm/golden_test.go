package helm

import (
	"context"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/rukpak/rukpak/internal/format/formattest"
	"github.com/rukpak/rukpak/pkg/format"
)

// Regenerate the golden files with: go test ./internal/format/helm -update
var update = flag.Bool("update", false, "rewrite testdata/golden from testdata/charts")

// Chart layouts of a golden case.
const (
	// layoutRoot has Chart.yaml at the root.
	layoutRoot = iota
	// layoutNested has <chart>/Chart.yaml, as an unpacked chart archive.
	layoutNested
	// layoutPackaged has <chart>-<version>.tgz at the root.
	layoutPackaged
)

// withAPI and withoutAPI are clusters that do and do not serve the kinds
// of the capabilities chart.
var (
	withAPI = &format.Capabilities{
		KubeVersion: "v1.31.2-gke.1000",
		APIVersions: []string{
			"v1", "apps/v1", "policy/v1", "policy/v1/PodDisruptionBudget",
			"monitoring.coreos.com/v1", "monitoring.coreos.com/v1/ServiceMonitor",
		},
	}
	withoutAPI = &format.Capabilities{
		KubeVersion: "1.24.0",
		APIVersions: []string{"v1", "apps/v1", "policy/v1beta1", "policy/v1beta1/PodDisruptionBudget"},
	}
)

// goldenCases are rendered to testdata/golden/<name>.
var goldenCases = []struct {
	name   string
	chart  string
	layout int
	values string
	caps   *format.Capabilities
}{
	{name: "webapp-defaults", chart: "webapp"},
	{name: "webapp-overrides", chart: "webapp", values: `
replicaCount: 3
image: {tag: "2.0.0", pullPolicy: Always}
fullnameOverride: shop
serviceAccount: {create: false, name: shop-runner}
podLabels: {team: payments}
service: {type: NodePort, port: 8080}
ingress:
  enabled: true
  className: nginx
  annotations: {example.com/rewrite: "/"}
  hosts: [{host: shop.example, paths: [{path: /api, pathType: Prefix}]}]
  tls: [{secretName: shop-tls, hosts: [shop.example]}]
autoscaling: {enabled: true, maxReplicas: 10}
resources: {limits: {cpu: 500m, memory: 128Mi}}
`},
	{name: "crds", chart: "crontabs"},
	{name: "subcharts-defaults", chart: "umbrella"},
	{name: "subcharts-globals", chart: "umbrella", values: `
global: {environment: prod}
backend: {replicas: 4, logLevel: debug}
cache: {enabled: true, size: 5Gi}
tags: {reporting: true}
`},
	{name: "hooks", chart: "hooks"},
	{name: "capabilities-with-api", chart: "capabilities", caps: withAPI},
	{name: "capabilities-without-api", chart: "capabilities", caps: withoutAPI},
	{name: "capabilities-no-cluster", chart: "capabilities"},
	{name: "e2e-app-defaults", chart: "e2e-app"},
	{name: "e2e-app-upgraded", chart: "e2e-app", values: `
replicas: 3
tier: backend
config: {color: green, size: 10}
worker: {enabled: false}
`},
	{name: "packaged-tgz", chart: "e2e-app", layout: layoutPackaged},
	{name: "nested-dir", chart: "e2e-app", layout: layoutNested},
}

// TestObjectsGolden renders each golden case and compares its objects with
// testdata/golden/<case>/NN_kind_name.yaml.
func TestObjectsGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			var fsys fs.FS
			switch tc.layout {
			case layoutRoot:
				fsys = os.DirFS(filepath.Join("testdata", "charts", tc.chart))
			case layoutNested:
				fsys = chartFS(t, tc.chart, tc.chart)
			case layoutPackaged:
				fsys = fstest.MapFS{tc.chart + "-1.0.0.tgz": {Data: packChart(t, chartFS(t, tc.chart, tc.chart))}}
			}
			cfg := format.Config{
				InstallNamespace: "install-ns",
				ReleaseName:      "rel",
				Values:           parseValues(t, tc.values),
				Capabilities:     tc.caps,
			}
			objs, err := New().Objects(context.Background(), fsys, cfg)
			if err != nil {
				t.Fatalf("Objects() error = %v", err)
			}
			formattest.CompareGolden(t, filepath.Join("testdata", "golden", tc.name), objs, *update)

			// A revision is rendered again to correct drift: it must
			// render the same every time.
			again, err := New().Objects(context.Background(), fsys, cfg)
			if err != nil {
				t.Fatalf("second Objects() error = %v", err)
			}
			first, _ := formattest.Files(objs)
			second, _ := formattest.Files(again)
			if len(first) != len(second) {
				t.Fatalf("second render has %d objects, first %d", len(second), len(first))
			}
			for name, data := range first {
				if second[name] != data {
					t.Errorf("second render differs in %s", name)
				}
			}
		})
	}
}
