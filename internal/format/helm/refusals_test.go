package helm

import (
	"context"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
	"github.com/rukpak/rukpak/pkg/format"
)

// simple is a valid chart with one ConfigMap.
var simple = files(
	"Chart.yaml", "apiVersion: v2\nname: simple\nversion: 0.1.0\n",
	"values.yaml", "replicas: 1\n",
	"templates/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  replicas: {{ .Values.replicas | quote }}\n",
)

// withTemplate returns simple with one more template.
func withTemplate(name, content string) fstest.MapFS {
	return with(simple, files("templates/"+name, content))
}

func TestRefusals(t *testing.T) {
	packedSimple := packChart(t, chartFS(t, "e2e-app", "e2e-app"))
	tests := []struct {
		name   string
		fsys   fstest.MapFS
		values string
		limits Limits
		reason string
		// want are parts of the message.
		want []string
	}{
		{name: "template execution error names the file and line", reason: v1alpha2.ReasonRenderFailed,
			fsys: withTemplate("broken.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Values.missing.field }}\n"),
			want: []string{"simple/templates/broken.yaml:4", "nil pointer"}},
		{name: "template parse error names the file", reason: v1alpha2.ReasonRenderFailed,
			fsys: withTemplate("parse.yaml", "{{ if }}\n"),
			want: []string{"simple/templates/parse.yaml"}},
		{name: "fail shows its message", reason: v1alpha2.ReasonRenderFailed,
			fsys: withTemplate("fail.yaml", "{{ fail \"set image.tag\" }}"),
			want: []string{"simple/templates/fail.yaml", "set image.tag"}},
		{name: "required value missing", reason: v1alpha2.ReasonRenderFailed,
			fsys: withTemplate("req.yaml", "name: {{ required \"image.tag is required\" .Values.image }}"),
			want: []string{"simple/templates/req.yaml", "image.tag is required"}},
		{name: "invalid YAML output", reason: v1alpha2.ReasonRenderFailed,
			fsys: withTemplate("bad.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n---\nkey: [unclosed\n"),
			want: []string{"simple/templates/bad.yaml (document 2)", "invalid YAML"}},
		{name: "output that is not an object", reason: v1alpha2.ReasonRenderFailed,
			fsys: withTemplate("list.yaml", "- a\n- b\n"),
			want: []string{"simple/templates/list.yaml (document 1)", "not a Kubernetes object but a list"}},
		{name: "object without kind", reason: v1alpha2.ReasonRenderFailed,
			fsys: withTemplate("nokind.yaml", "apiVersion: v1\nmetadata: {name: x}\n"),
			want: []string{"simple/templates/nokind.yaml", "kind is missing"}},
		{name: "object without name", reason: v1alpha2.ReasonRenderFailed,
			fsys: withTemplate("noname.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {labels: {a: b}}\n"),
			want: []string{"simple/templates/noname.yaml", "no metadata.name"}},
		{name: "schema violation", reason: v1alpha2.ReasonInvalidConfig, values: "replicas: many",
			fsys: with(simple, files("values.schema.json", `{"type":"object","properties":{"replicas":{"type":"integer"}}}`)),
			want: []string{"values.schema.json", "chart simple", "/replicas", "want integer"}},
		{name: "schema violation in a subchart", reason: v1alpha2.ReasonInvalidConfig, values: "sub: {t: 5}",
			fsys: with(valuesChart, files("charts/sub/values.schema.json", `{"properties":{"t":{"type":"string"}}}`)),
			want: []string{"chart parent/charts/sub", "/t"}},
		{name: "invalid schema", reason: v1alpha2.ReasonInvalidContent,
			fsys: with(simple, files("values.schema.json", `{"type": 5`)),
			want: []string{"simple/values.schema.json: invalid schema"}},
		{name: "missing dependency", reason: v1alpha2.ReasonInvalidContent,
			fsys: with(simple, files("Chart.yaml", "apiVersion: v2\nname: simple\nversion: 0.1.0\ndependencies:\n- {name: db, version: 1.0.0, repository: https://charts.example}\n- {name: queue, version: 1.0.0}\n")),
			want: []string{"missing from simple/charts/", "db, queue"}},
		{name: "a CRD in two crds/ directories, different", reason: v1alpha2.ReasonInvalidContent,
			fsys: with(valuesChart, files("crds/w.yaml", widgetCRD("v1"), "charts/sub/crds/w.yaml", widgetCRD("v2"))),
			want: []string{"CustomResourceDefinition widgets.example.com", "parent/crds/w.yaml", "parent/charts/sub/crds/w.yaml"}},
		{name: "no chart", reason: v1alpha2.ReasonInvalidContent,
			fsys: files("manifests/cm.yaml", "x: y", "README.md", "hi"),
			want: []string{"no Helm chart", "README.md, manifests/"}},
		{name: "empty tree", reason: v1alpha2.ReasonInvalidContent, fsys: fstest.MapFS{},
			want: []string{"no Helm chart", "found nothing"}},
		{name: "two charts", reason: v1alpha2.ReasonInvalidContent,
			fsys: with(chartFS(t, "e2e-app", "a"), chartFS(t, "e2e-app", "b")),
			want: []string{"2 charts", "a/Chart.yaml, b/Chart.yaml"}},
		{name: "two packaged charts", reason: v1alpha2.ReasonInvalidContent,
			fsys: fstest.MapFS{"a-1.0.0.tgz": {Data: packedSimple}, "b-1.0.0.tgz": {Data: packedSimple}},
			want: []string{"2 packaged charts", "a-1.0.0.tgz, b-1.0.0.tgz"}},
		{name: "packaged chart that is not an archive", reason: v1alpha2.ReasonInvalidContent,
			fsys: files("c-1.0.0.tgz", "not gzip"),
			want: []string{"invalid chart in c-1.0.0.tgz"}},
		{name: "kubeVersion unmet", reason: v1alpha2.ReasonInvalidContent,
			fsys: with(simple, files("Chart.yaml", "apiVersion: v2\nname: simple\nversion: 0.1.0\nkubeVersion: '>= 1.99.0-0'\n")),
			want: []string{"requires kubeVersion \">= 1.99.0-0\"", "Kubernetes v1.20.0 does not meet"}},
		{name: "duplicate objects", reason: v1alpha2.ReasonInvalidContent,
			fsys: withTemplate("again.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: rel\n  namespace: ns\n"),
			want: []string{"ConfigMap/rel", "defined twice", "simple/templates/again.yaml", "simple/templates/cm.yaml"}},
		{name: "duplicate objects in one file", reason: v1alpha2.ReasonInvalidContent,
			fsys: withTemplate("twice.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: s}\n"),
			want: []string{"twice.yaml (document 1) and simple/templates/twice.yaml (document 2)"}},
		{name: "Chart.yaml without version", reason: v1alpha2.ReasonInvalidContent,
			fsys: with(simple, files("Chart.yaml", "apiVersion: v2\nname: simple\n")),
			want: []string{"invalid chart in the bundle's root", "version is required"}},
		{name: "Chart.yaml not YAML", reason: v1alpha2.ReasonInvalidContent,
			fsys: with(simple, files("Chart.yaml", "name: [")),
			want: []string{"Chart.yaml"}},
		{name: "unsupported apiVersion", reason: v1alpha2.ReasonInvalidContent,
			fsys: with(simple, files("Chart.yaml", "apiVersion: v3\nname: simple\nversion: 0.1.0\n")),
			want: []string{"apiVersion \"v3\" is not supported"}},
		{name: "library chart", reason: v1alpha2.ReasonInvalidContent,
			fsys: with(simple, files("Chart.yaml", "apiVersion: v2\nname: simple\nversion: 0.1.0\ntype: library\n")),
			want: []string{"library chart"}},
		{name: "invalid YAML in crds/", reason: v1alpha2.ReasonInvalidContent,
			fsys: with(simple, files("crds/bad.yaml", "kind: [")),
			want: []string{"simple/crds/bad.yaml (document 1): invalid YAML"}},
		{name: "symlink", reason: v1alpha2.ReasonInvalidContent,
			fsys: with(simple, fstest.MapFS{"templates/link.yaml": {Data: []byte("cm.yaml"), Mode: fs.ModeSymlink}}),
			want: []string{"templates/link.yaml: not a regular file"}},
		{name: "file over the limit", reason: v1alpha2.ReasonInvalidContent, limits: Limits{MaxFileBytes: 100},
			fsys: withTemplate("big.yaml", "# "+strings.Repeat("x", 200)),
			want: []string{"templates/big.yaml", "limit of 100 bytes per file"}},
		{name: "too many files", reason: v1alpha2.ReasonInvalidContent, limits: Limits{MaxFiles: 2},
			fsys: simple, want: []string{"more than 2 files"}},
		{name: "chart over the total limit", reason: v1alpha2.ReasonInvalidContent, limits: Limits{MaxTotalBytes: 150},
			fsys: simple, want: []string{"limit of 150 bytes in total"}},
		{name: "packaged chart over the total limit", reason: v1alpha2.ReasonInvalidContent, limits: Limits{MaxTotalBytes: 4000},
			fsys: fstest.MapFS{"app.tgz": {Data: packChart(t, files("app/Chart.yaml", "apiVersion: v2\nname: app\nversion: 1.0.0\n",
				"app/templates/pad.txt", strings.Repeat("x", 8000)))}},
			want: []string{"app.tgz: app/templates/pad.txt", "limit of 4000 bytes in total"}},
		{name: "packaged subchart over the total limit", reason: v1alpha2.ReasonInvalidContent, limits: Limits{MaxTotalBytes: 1 << 16},
			fsys: with(simple, fstest.MapFS{"charts/bomb-1.0.0.tgz": {Data: packChart(t, files(
				"bomb/Chart.yaml", "apiVersion: v2\nname: bomb\nversion: 1.0.0\n",
				"bomb/files/zeros", strings.Repeat("\x00", 1<<20)))}}),
			want: []string{"charts/bomb-1.0.0.tgz: bomb/files/zeros"}},
		{name: "too many objects", reason: v1alpha2.ReasonInvalidContent, limits: Limits{MaxObjects: 2},
			fsys: withTemplate("more.yaml", "{{ range until 3 }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: m{{ . }}}\n{{ end }}"),
			want: []string{"4 objects, over the limit of 2"}},
		{name: "rendered output over the limit", reason: v1alpha2.ReasonRenderFailed, limits: Limits{MaxRenderedBytes: 1000},
			fsys: withTemplate("huge.yaml", "# {{ repeat 2000 \"x\" }}"),
			want: []string{"output is over the limit of 1000 bytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &Format{Limits: tt.limits}
			_, err := f.Objects(context.Background(), tt.fsys, format.Config{
				InstallNamespace: "ns", ReleaseName: "rel", Values: parseValues(t, tt.values),
			})
			if err == nil {
				t.Fatal("Objects() succeeded, want an error")
			}
			t.Logf("message: %v", err)
			if got := failure.Reason(err, "(none)"); got != tt.reason {
				t.Errorf("reason = %s, want %s (error: %v)", got, tt.reason, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message %q does not contain %q", err.Error(), w)
				}
			}
		})
	}
}
