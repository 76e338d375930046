package helm

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
	"github.com/rukpak/rukpak/pkg/format"
)

// fuzzLimits keep one fuzz input cheap.
var fuzzLimits = Limits{MaxFiles: 64, MaxFileBytes: 1 << 20, MaxTotalBytes: 4 << 20, MaxRenderedBytes: 4 << 20, MaxObjects: 1000}

// FuzzObjects feeds arbitrary bytes to a chart as a template, Chart.yaml,
// values.yaml, values.schema.json, a crds/ file, a packaged subchart and a
// packaged chart: the result must be objects with an apiVersion, a kind
// and a name, or a failure with a reason of the Helm format, never a
// panic.
func FuzzObjects(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "charts", "*", "templates", "*"))
	more, _ := filepath.Glob(filepath.Join("testdata", "charts", "*", "*.yaml"))
	for _, s := range append(seeds, more...) {
		if data, err := os.ReadFile(s); err == nil {
			f.Add(data)
		}
	}
	f.Add(packChart(f, chartFS(f, "e2e-app", "e2e-app")))
	for _, s := range []string{"", "---", "{{", "{{ .Values }}", "{{ include \"x\" . }}", "{{ fail \"x\" }}",
		"{{ toYaml .Capabilities }}", "- x", "null", "\xff", "&a [*a, *a]", "apiVersion: v2\nname: x\nversion: 1.0.0",
		`{"$ref": "#"}`, "kind: List\nitems: [1]", "\x1f\x8b\x08"} {
		f.Add([]byte(s))
	}
	base := chartFS(f, "e2e-app", "")
	f.Fuzz(func(t *testing.T, data []byte) {
		inputs := map[string]fstest.MapFS{
			"template":   with(base, fstest.MapFS{"templates/fuzz.yaml": {Data: data}}),
			"Chart.yaml": with(base, fstest.MapFS{"Chart.yaml": {Data: data}}),
			"values":     with(base, fstest.MapFS{"values.yaml": {Data: data}}),
			"schema":     with(base, fstest.MapFS{"values.schema.json": {Data: data}}),
			"crd":        with(base, fstest.MapFS{"crds/fuzz.yaml": {Data: data}}),
			"subchart":   with(base, fstest.MapFS{"charts/fuzz-1.0.0.tgz": {Data: data}}),
			"packaged":   {"fuzz-1.0.0.tgz": {Data: data}},
		}
		for name, fsys := range inputs {
			fm := &Format{Limits: fuzzLimits}
			objs, err := fm.Objects(context.Background(), fsys, format.Config{InstallNamespace: "ns", ReleaseName: "rel"})
			if err != nil {
				switch r := failure.Reason(err, ""); r {
				case v1alpha2.ReasonInvalidContent, v1alpha2.ReasonRenderFailed, v1alpha2.ReasonInvalidConfig:
				default:
					t.Fatalf("%s: error %v has reason %q", name, err, r)
				}
				continue
			}
			for _, o := range objs {
				if o.GetKind() == "" || o.GetName() == "" || o.GetAPIVersion() == "" {
					t.Fatalf("%s: object without apiVersion, kind or name: %v", name, o.Object)
				}
			}
		}
	})
}
