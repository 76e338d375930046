package sandboxed

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
	"github.com/rukpak/rukpak/pkg/format"
)

// laughs is a "billion laughs" YAML object under key: nine levels of
// aliases that would expand to 10^9 strings.
func laughs(key string) string {
	var b strings.Builder
	b.WriteString(key + ":\n")
	b.WriteString("  a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	for i, l := range "bcdefghi" {
		prev := string("abcdefgh"[i])
		b.WriteString("  " + string(l) + ": &" + string(l) + " [" + strings.TrimSuffix(strings.Repeat("*"+prev+",", 10), ",") + "]\n")
	}
	return b.String()
}

// A YAML alias bomb in any YAML a format reads — a plain manifest, a
// kustomization and what it includes, a chart's Chart.yaml, values.yaml
// and rendered templates, a registry+v1 bundle's CSV and annotations — is
// refused quickly, naming the file, with a reason that holds (not a crash,
// not a retry), in a child or in the manager's own process.
func TestYAMLBombs(t *testing.T) {
	r := newRunner(t, testLimits)
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n"
	bombCM := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: laughs}\n" + laughs("data")
	csv, err := os.ReadFile(filepath.Join("..", "registryv1", "testdata", "bundles", "widget-operator", "manifests", "widget-operator.clusterserviceversion.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crd, err := os.ReadFile(filepath.Join("..", "registryv1", "testdata", "bundles", "widget-operator", "manifests", "widgets.example.com.crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	annotations, err := os.ReadFile(filepath.Join("..", "registryv1", "testdata", "bundles", "widget-operator", "metadata", "annotations.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	operator := func(csvText, annotationsText string) map[string]string {
		return map[string]string{
			"manifests/widget-operator.clusterserviceversion.yaml": csvText,
			"manifests/widgets.example.com.crd.yaml":               string(crd),
			"metadata/annotations.yaml":                            annotationsText,
		}
	}
	tests := []struct {
		name   string
		format string
		files  map[string]string
		want   string
	}{
		{"a small plain manifest (decoded in process)", Plain,
			map[string]string{"manifests/bomb.yaml": bombCM}, "manifests/bomb.yaml"},
		{"a large plain bundle (decoded in a child)", Plain,
			map[string]string{"manifests/bomb.yaml": bombCM, "manifests/padding.yaml": strings.Repeat("# padding\n", 120_000) + cm}, "manifests/bomb.yaml"},
		{"a kustomization", Plain,
			map[string]string{"kustomization.yaml": "resources: [cm.yaml]\n" + laughs("commonLabels"), "cm.yaml": cm}, "kustomization.yaml"},
		{"a resource of a kustomization", Plain,
			map[string]string{"kustomization.yaml": "resources: [bomb.yaml]\n", "bomb.yaml": bombCM}, "bomb.yaml"},
		{"a chart's Chart.yaml", Helm,
			map[string]string{"Chart.yaml": "apiVersion: v2\nname: laughs\nversion: 0.1.0\n" + laughs("annotations"), "templates/cm.yaml": cm}, "Chart.yaml"},
		{"a chart's values.yaml", Helm,
			chart("laughs", cm, laughs("x")), "values.yaml"},
		{"a chart's rendered template", Helm,
			chart("laughs", bombCM, ""), "templates/cm.yaml"},
		{"a registry+v1 CSV", RegistryV1,
			operator(string(csv)+laughs("laughs"), string(annotations)), "clusterserviceversion.yaml"},
		{"a registry+v1 bundle's annotations", RegistryV1,
			operator(string(csv), string(annotations)+laughs("laughs")), "annotations.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFormat(t, tt.format, r)
			start := time.Now()
			_, err := f.Objects(context.Background(), os.DirFS(writeFiles(t, tt.files)), format.Config{ReleaseName: "rel", InstallNamespace: "ns"})
			t.Logf("refused in %v (%s): %v", time.Since(start).Round(time.Millisecond), failure.Reason(err, ""), err)
			if err == nil {
				t.Fatal("the bomb rendered")
			}
			if reason := failure.Reason(err, ""); reason != v1alpha2.ReasonInvalidContent && reason != v1alpha2.ReasonRenderFailed && reason != v1alpha2.ReasonResourceLimit {
				t.Fatalf("reason %q, want InvalidContent, RenderFailed or ResourceLimit", reason)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not name %q", err, tt.want)
			}
		})
	}
}
