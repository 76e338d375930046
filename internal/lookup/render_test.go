//go:build integration

package lookup

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/format/helm"
	"github.com/rukpak/rukpak/internal/format/sandboxed"
	"github.com/rukpak/rukpak/internal/sandbox"
	"github.com/rukpak/rukpak/pkg/failure"
	"github.com/rukpak/rukpak/pkg/format"
)

// counting counts the renders of a format.
type counting struct {
	format.Format
	passes int
}

func (c *counting) Objects(ctx context.Context, fsys fs.FS, cfg format.Config) ([]*unstructured.Unstructured, error) {
	c.passes++
	return c.Format.Objects(ctx, fsys, cfg)
}

// lookupChart is a chart whose template renders ConfigMap "out" with data
// from tpl.
func lookupChart(tpl string) fstest.MapFS {
	return fstest.MapFS{
		"Chart.yaml":         {Data: []byte("apiVersion: v2\nname: reader\nversion: 0.1.0\n")},
		"templates/out.yaml": {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: out}\ndata:\n" + tpl)},
	}
}

// Templates of the tests.
const (
	// The lookup-or-random pattern of database charts.
	passwordTemplate = `{{- $s := lookup "v1" "Secret" .Release.Namespace "db" }}
  password: {{ if $s }}{{ index $s.data "password" | b64dec }}{{ else }}{{ randAlphaNum 16 }}{{ end }}
`
	// Follows the ConfigMaps a -> b -> c by their data.next: one lookup
	// more on each pass (and, while a ConfigMap is not known, one of
	// ConfigMap "end", which does not exist).
	chainTemplate = `{{- $name := "a" }}
{{- range until 3 }}
{{- $cm := lookup "v1" "ConfigMap" $.Release.Namespace $name }}
{{- $name = dig "data" "next" "end" $cm }}
{{- end }}
  last: {{ $name }}
`
	// Looks up n ConfigMaps.
	manyTemplate = `{{- range until 5 }}
{{- $_ := lookup "v1" "ConfigMap" $.Release.Namespace (printf "cm-%d" .) }}
{{- end }}
  many: "yes"
`
	listTemplate = `  count: {{ len (lookup "v1" "ConfigMap" .Release.Namespace "").items | quote }}
`
	privateTemplate = `{{- $s := lookup "v1" "Secret" .Release.Namespace "private" }}
  token: {{ $s.data.token }}
`
	// Fails, showing the password it read.
	leakTemplate = `{{- $s := lookup "v1" "Secret" .Release.Namespace "db" }}
{{- fail (printf "cannot use %s" (index $s.data "password" | b64dec)) }}
`
	noLookupTemplate = `  plain: "yes"
`
)

func TestRender(t *testing.T) {
	f := newFixture(t, Limits{})
	tight := newFixture(t, Limits{MaxQueries: 3, MaxBytes: 512, MaxPasses: 2})
	tests := []struct {
		name     string
		fixture  *fixture
		template string
		// want is the data of ConfigMap out.
		want    map[string]any
		passes  int
		queries int // answers returned
		reason  string
		message []string
	}{
		{name: "no lookup: rendered once", fixture: f, template: noLookupTemplate,
			want: map[string]any{"plain": "yes"}, passes: 1, queries: 0},
		{name: "the stored password", fixture: f, template: passwordTemplate,
			want: map[string]any{"password": "stored-Passw0rd"}, passes: 2, queries: 1},
		{name: "a chain of lookups, one more each pass", fixture: f, template: chainTemplate,
			want: map[string]any{"last": "d"}, passes: 4, queries: 4},
		{name: "a list", fixture: f, template: listTemplate,
			want: map[string]any{"count": "3"}, passes: 2, queries: 1},
		{name: "a Secret the identity may not read", fixture: f, template: privateTemplate,
			reason:  v1alpha2.ReasonRenderFailed,
			message: []string{`lookup "v1" "Secret" "` + f.ns + `" "private"`, "the install identity may not get secrets"}},
		{name: "the Secret's values are redacted", fixture: f, template: leakTemplate,
			reason: v1alpha2.ReasonRenderFailed, message: []string{"cannot use [redacted]"}},
		{name: "over the queries bound", fixture: tight, template: manyTemplate,
			reason: v1alpha2.ReasonResourceLimit, message: []string{`lookup "v1" "ConfigMap" "` + tight.ns + `" "cm-3"`, "more than 3 distinct lookups"}},
		{name: "over the passes bound", fixture: tight, template: chainTemplate,
			reason: v1alpha2.ReasonResourceLimit, message: []string{`lookup "v1" "ConfigMap" "` + tight.ns + `" "b"`, "rendered 2 times, the limit"}},
		{name: "over the bytes bound", fixture: tight, template: listTemplate,
			reason: v1alpha2.ReasonResourceLimit, message: []string{`lookup "v1" "ConfigMap" "` + tight.ns + `" ""`, "over the limit of 512 bytes in total"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &counting{Format: helm.New()}
			objs, answers, err := Render(context.Background(), c, lookupChart(tt.template),
				format.Config{ReleaseName: "rel", InstallNamespace: tt.fixture.ns}, tt.fixture.asReader)
			if tt.reason != "" {
				t.Logf("message: %v", err)
				if failure.Reason(err, "") != tt.reason {
					t.Fatalf("error %v (%s), want reason %s", err, failure.Reason(err, "-"), tt.reason)
				}
				for _, m := range tt.message {
					if !strings.Contains(err.Error(), m) {
						t.Errorf("message %q does not hold %q", err, m)
					}
				}
				if strings.Contains(err.Error(), "stored-Passw0rd") {
					t.Errorf("message %q holds the Secret's password", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.passes != tt.passes || len(answers) != tt.queries {
				t.Errorf("%d passes and %d answers, want %d and %d", c.passes, len(answers), tt.passes, tt.queries)
			}
			data := objs[0].Object["data"].(map[string]any)
			for k, v := range tt.want {
				if data[k] != v {
					t.Errorf("data.%s = %v, want %v", k, data[k], v)
				}
			}
		})
	}
}

// Answers given in Config.Lookups are used as they are, and count
// against the bounds; rendering with the answers Render returned renders
// once more to the same objects.
func TestRenderFromGivenAnswers(t *testing.T) {
	f := newFixture(t, Limits{})
	cfg := format.Config{ReleaseName: "rel", InstallNamespace: f.ns}
	objs, answers, err := Render(context.Background(), helm.New(), lookupChart(passwordTemplate), cfg, f.asReader)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Lookups = answers
	c := &counting{Format: helm.New()}
	again, _, err := Render(context.Background(), c, lookupChart(passwordTemplate), cfg, f.asReader)
	if err != nil {
		t.Fatal(err)
	}
	if c.passes != 1 {
		t.Errorf("%d passes, want 1", c.passes)
	}
	if got, want := again[0].Object["data"], objs[0].Object["data"]; !equalJSON(t, got, want) {
		t.Errorf("rendered %v again, want %v", got, want)
	}
	if s := SecretStrings(answers); len(s) != 2 || s[0] != "c3RvcmVkLVBhc3N3MHJk" || s[1] != "stored-Passw0rd" {
		t.Errorf("SecretStrings = %q, want the password base64-encoded and decoded", s)
	}
	tight := &Resolver{reader: f.asReader.reader, mapper: f.asReader.mapper, limits: Limits{MaxQueries: 1, MaxBytes: 1 << 20, MaxPasses: 8}, pageSize: 2}
	cfg.Lookups = answers
	_, _, err = Render(context.Background(), helm.New(), lookupChart(chainTemplate+passwordTemplate), cfg, tight)
	if failure.Reason(err, "") != v1alpha2.ReasonResourceLimit {
		t.Errorf("error %v, want ResourceLimit: the given answer counts", err)
	}
}

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb)
}

// Rendered in a sandboxed child, as the manager renders: the child asks,
// the manager answers, the child renders with the answers.
func TestRenderSandboxed(t *testing.T) {
	f := newFixture(t, Limits{})
	// The default memory: a child of a race-enabled test binary needs more
	// than the tests of limits give it.
	runner, err := sandbox.New(sandbox.Limits{Memory: sandbox.DefaultMemory, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	sf, err := sandboxed.New(sandboxed.Helm, runner)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, file := range lookupChart(chainTemplate + passwordTemplate) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, file.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := &counting{Format: sf}
	objs, answers, err := Render(context.Background(), c, os.DirFS(dir), format.Config{ReleaseName: "rel", InstallNamespace: f.ns}, f.asReader)
	if err != nil {
		t.Fatal(err)
	}
	data := objs[0].Object["data"].(map[string]any)
	if data["last"] != "d" || data["password"] != "stored-Passw0rd" || c.passes != 4 || len(answers) != 5 {
		t.Errorf("data %v after %d passes with %d answers, want last d, the stored password, 4 passes and 5 answers", data, c.passes, len(answers))
	}
}

// stuck is a format that always needs the answers of queries.
type stuck struct{ queries []format.LookupQuery }

func (s stuck) Objects(context.Context, fs.FS, format.Config) ([]*unstructured.Unstructured, error) {
	return nil, &format.LookupsNeeded{Queries: s.queries}
}

// A format that needs answers it was given, or names none, is an error,
// not a loop.
func TestRenderFormatAskingAgain(t *testing.T) {
	f := newFixture(t, Limits{})
	db := format.LookupQuery{APIVersion: "v1", Kind: "Secret", Namespace: f.ns, Name: "db"}
	for _, tt := range []struct {
		name    string
		queries []format.LookupQuery
		want    string
	}{
		{"asks again", []format.LookupQuery{db}, "asks again for answers it was given"},
		{"names none", nil, "names none"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Render(context.Background(), stuck{tt.queries}, fstest.MapFS{}, format.Config{}, f.asReader)
			if err == nil || !strings.Contains(err.Error(), tt.want) || failure.As(err) != nil {
				t.Fatalf("error %v, want a plain error saying %q", err, tt.want)
			}
		})
	}
}
