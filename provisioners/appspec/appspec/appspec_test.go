package appspec_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"sigs.k8s.io/yaml"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
	"github.com/rukpak/rukpak/pkg/format"

	"example.com/rukpak-appspec/appspec"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestObjects: apps become a Deployment and, with a port, a Service,
// compared with golden files (regenerate with -update).
func TestObjects(t *testing.T) {
	tests := []struct {
		name, app string
		params    map[string]any
	}{
		{name: "minimal", app: "name: web\nimage: nginx:1.27\n"},
		{name: "service-env-labels", app: "name: api\nimage: api:2\nreplicas: 3\nport: 8080\nenv: {B: two, A: one}\n",
			params: map[string]any{"labels": map[string]any{"team": "payments"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := appspec.Format{}.Objects(context.Background(), fstest.MapFS{appspec.File: {Data: []byte(tt.app)}},
				format.Config{InstallNamespace: "ns", ReleaseName: "rel", Parameters: tt.params})
			if err != nil {
				t.Fatal(err)
			}
			var got []byte
			for _, o := range objs {
				b, err := yaml.Marshal(o.Object)
				if err != nil {
					t.Fatal(err)
				}
				got = append(append(got, "---\n"...), b...)
			}
			golden := filepath.Join("testdata", tt.name+".yaml")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Fatalf("objects differ from %s:\n%s", golden, got)
			}
		})
	}
}

// TestRefusals: content that is wrong fails with InvalidContent naming
// app.yaml and the field; class parameters that are wrong with
// InvalidConfig.
func TestRefusals(t *testing.T) {
	tests := []struct {
		name   string
		files  fstest.MapFS
		params map[string]any
		reason string
		msg    string
	}{
		{name: "no app.yaml", files: fstest.MapFS{"other.yaml": {}}, reason: v1alpha2.ReasonInvalidContent, msg: "no app.yaml at its root"},
		{name: "not YAML", files: app("name: [web"), reason: v1alpha2.ReasonInvalidContent, msg: "app.yaml:"},
		{name: "unknown field", files: app("name: web\nimage: x\nreplica: 2\n"), reason: v1alpha2.ReasonInvalidContent, msg: `unknown field "replica"`},
		{name: "bad name", files: app("name: Web_1\nimage: x\n"), reason: v1alpha2.ReasonInvalidContent, msg: `name "Web_1"`},
		{name: "no image", files: app("name: web\n"), reason: v1alpha2.ReasonInvalidContent, msg: "image is required"},
		{name: "too many replicas", files: app("name: web\nimage: x\nreplicas: 11\n"), reason: v1alpha2.ReasonInvalidContent, msg: "replicas 11: must be between 0 and 10"},
		{name: "class allows fewer", files: app("name: web\nimage: x\nreplicas: 3\n"), params: map[string]any{"maxReplicas": 2}, reason: v1alpha2.ReasonInvalidContent, msg: "between 0 and 2"},
		{name: "bad port", files: app("name: web\nimage: x\nport: 70000\n"), reason: v1alpha2.ReasonInvalidContent, msg: "port 70000"},
		{name: "bad env", files: app("name: web\nimage: x\nenv: {'1=x': y}\n"), reason: v1alpha2.ReasonInvalidContent, msg: `env "1=x"`},
		{name: "huge file", files: app("name: web\nimage: x\n#" + strings.Repeat("x", 70<<10) + "\n"), reason: v1alpha2.ReasonInvalidContent, msg: "over the limit"},
		{name: "bad parameters", files: app("name: web\nimage: x\n"), params: map[string]any{"maxReplica": 2}, reason: v1alpha2.ReasonInvalidConfig, msg: `spec.parameters: error unmarshaling JSON: while decoding JSON: json: unknown field "maxReplica"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := appspec.Format{}.Objects(context.Background(), tt.files, format.Config{Parameters: tt.params})
			f := failure.As(err)
			if f == nil || f.Reason != tt.reason || !strings.Contains(f.Message, tt.msg) {
				t.Fatalf("err = %v, want %s containing %q", err, tt.reason, tt.msg)
			}
		})
	}
}

func app(content string) fstest.MapFS {
	return fstest.MapFS{appspec.File: {Data: []byte(content)}}
}
