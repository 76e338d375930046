package helm

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
	"github.com/rukpak/rukpak/pkg/format"
)

// lookupTestChart is a chart whose one template renders ConfigMap "out"
// with data from tpl.
func lookupTestChart(tpl string) map[string]string {
	return map[string]string{
		"Chart.yaml":         "apiVersion: v2\nname: reader\nversion: 0.1.0\n",
		"templates/out.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: out}\ndata:\n" + tpl,
	}
}

// The lookup-or-random pattern of database charts: reuse the password of
// the Secret when it exists, else make one.
const passwordTemplate = `{{- $s := lookup "v1" "Secret" .Release.Namespace "db" }}
  password: {{ if $s }}{{ index $s.data "password" }}{{ else }}{{ randAlphaNum 16 | b64enc }}{{ end }}
`

// Queries and answers of the tests.
var (
	dbSecret    = format.LookupQuery{APIVersion: "v1", Kind: "Secret", Namespace: "ns", Name: "db"}
	appConfig   = format.LookupQuery{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "app"}
	appSecret   = format.LookupQuery{APIVersion: "v1", Kind: "Secret", Namespace: "ns", Name: "app-secret"}
	allConfigs  = format.LookupQuery{APIVersion: "v1", Kind: "ConfigMap"}
	dbSecretObj = json.RawMessage(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db","namespace":"ns"},"data":{"password":"c3RvcmVk"}}`)
)

// answers builds a Lookups map from query/answer pairs.
func answers(kv ...any) map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(format.LookupQuery).Key()] = kv[i+1].(json.RawMessage)
	}
	return m
}

func TestLookup(t *testing.T) {
	random := regexp.MustCompile(`^[A-Za-z0-9+/]{22}==$`)
	tests := []struct {
		name     string
		template string
		lookups  map[string]json.RawMessage
		release  format.Release
		// want is the data of ConfigMap out; a regexp where a value
		// is *regexp.Regexp.
		want map[string]any
		// needed are the queries of a *format.LookupsNeeded.
		needed []format.LookupQuery
		// reason and message of a failure.
		reason, message string
	}{
		{name: "password offline: random", template: passwordTemplate,
			want: map[string]any{"password": random}},
		{name: "password: the Secret is needed", template: passwordTemplate, lookups: answers(),
			needed: []format.LookupQuery{dbSecret}},
		{name: "password: the Secret's", template: passwordTemplate, lookups: answers(dbSecret, dbSecretObj),
			want: map[string]any{"password": "c3RvcmVk"}},
		{name: "password: no Secret, random", template: passwordTemplate, lookups: answers(dbSecret, format.LookupNotFound),
			want: map[string]any{"password": random}},
		{name: "nested: the first lookup is needed, the template failing meanwhile",
			template: nestedTemplate, lookups: answers(),
			needed: []format.LookupQuery{appConfig}},
		{name: "nested offline: the template fails", template: nestedTemplate,
			reason: v1alpha2.ReasonRenderFailed, message: "nil pointer evaluating interface {}.secretName"},
		{name: "nested: the second lookup is needed once the first is answered",
			template: nestedTemplate, lookups: answers(appConfig, json.RawMessage(`{"data":{"secretName":"app-secret"}}`)),
			needed: []format.LookupQuery{appSecret}},
		{name: "nested: both answered",
			template: nestedTemplate, lookups: answers(appConfig, json.RawMessage(`{"data":{"secretName":"app-secret"}}`),
				appSecret, json.RawMessage(`{"data":{"token":"dG9r"}}`)),
			want: map[string]any{"token": "dG9r"}},
		{name: "required: needed rather than failing", template: requiredTemplate, lookups: answers(),
			needed: []format.LookupQuery{dbSecret}},
		{name: "required: fails when the Secret does not exist", template: requiredTemplate,
			lookups: answers(dbSecret, format.LookupNotFound),
			reason:  v1alpha2.ReasonRenderFailed, message: "the Secret db must exist"},
		{name: "required: fails offline", template: requiredTemplate,
			reason: v1alpha2.ReasonRenderFailed, message: "the Secret db must exist"},
		{name: "required: met", template: requiredTemplate, lookups: answers(dbSecret, dbSecretObj),
			want: map[string]any{"password": "c3RvcmVk"}},
		{name: "list", template: `{{- range (lookup "v1" "ConfigMap" "" "").items }}
  {{ .metadata.name }}: {{ .metadata.namespace }}
{{- end }}
`, lookups: answers(allConfigs, json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMapList","items":[
			{"metadata":{"name":"a","namespace":"ns-a"}},{"metadata":{"name":"b","namespace":"ns-b"}}]}`)),
			want: map[string]any{"a": "ns-a", "b": "ns-b"}},
		{name: "each query asked once, in call order", template: `{{- $a := lookup "v1" "Secret" "ns" "db" }}
{{- $b := lookup "v1" "ConfigMap" "" "" }}
{{- $c := lookup "v1" "Secret" "ns" "db" }}
`, lookups: answers(), needed: []format.LookupQuery{dbSecret, allConfigs}},
		{name: "a lookup in tpl is needed too", template: `  fromTpl: {{ tpl "{{ lookup \"v1\" \"Secret\" .Release.Namespace \"db\" | len }}" . | quote }}
`, lookups: answers(), needed: []format.LookupQuery{dbSecret}},
		{name: "a lookup in tpl answered", template: `  fromTpl: {{ tpl "{{ (lookup \"v1\" \"Secret\" .Release.Namespace \"db\").data.password }}" . | quote }}
`, lookups: answers(dbSecret, dbSecretObj), want: map[string]any{"fromTpl": "c3RvcmVk"}},
		{name: "every call gets its own copy", template: `{{- $a := lookup "v1" "Secret" "ns" "db" }}
{{- $_ := set $a "changed" "yes" }}
  changed: {{ hasKey (lookup "v1" "Secret" "ns" "db") "changed" | quote }}
`, lookups: answers(dbSecret, dbSecretObj), want: map[string]any{"changed": "false"}},
		{name: "install of revision 1 by default", template: releaseTemplate,
			want: map[string]any{"isInstall": "true", "isUpgrade": "false", "revision": "1"}},
		{name: "install of a given revision", template: releaseTemplate, release: format.Release{Revision: 2},
			want: map[string]any{"isInstall": "true", "isUpgrade": "false", "revision": "2"}},
		{name: "upgrade", template: releaseTemplate, release: format.Release{IsUpgrade: true, Revision: 3},
			want: map[string]any{"isInstall": "false", "isUpgrade": "true", "revision": "3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := files()
			for p, c := range lookupTestChart(tt.template) {
				fsys = with(fsys, files(p, c))
			}
			objs, err := New().Objects(context.Background(), fsys, format.Config{
				InstallNamespace: "ns", ReleaseName: "rel", Lookups: tt.lookups, Release: tt.release,
			})
			var needed *format.LookupsNeeded
			switch {
			case tt.needed != nil:
				if !errors.As(err, &needed) {
					t.Fatalf("error %v (%T), want *format.LookupsNeeded", err, err)
				}
				if !reflect.DeepEqual(needed.Queries, tt.needed) {
					t.Fatalf("queries %v, want %v", needed.Queries, tt.needed)
				}
				return
			case tt.reason != "":
				if failure.Reason(err, "") != tt.reason || !strings.Contains(err.Error(), tt.message) {
					t.Fatalf("error %v (%s), want %s containing %q", err, failure.Reason(err, "-"), tt.reason, tt.message)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			data, _ := objs[0].Object["data"].(map[string]any)
			if len(data) != len(tt.want) {
				t.Fatalf("data %v, want %v", data, tt.want)
			}
			for k, w := range tt.want {
				if re, ok := w.(*regexp.Regexp); ok {
					if s, _ := data[k].(string); !re.MatchString(s) {
						t.Errorf("data.%s = %v, want a match of %s", k, data[k], re)
					}
				} else if data[k] != w {
					t.Errorf("data.%s = %v, want %v", k, data[k], w)
				}
			}
		})
	}
}

// nestedTemplate looks up a Secret named by a ConfigMap it looks up: with
// the ConfigMap not known yet, the second lookup gets a nil name and the
// template fails.
const nestedTemplate = `{{- $cm := lookup "v1" "ConfigMap" .Release.Namespace "app" }}
{{- $s := lookup "v1" "Secret" .Release.Namespace $cm.data.secretName }}
  token: {{ $s.data.token }}
`

// requiredTemplate requires the Secret's password.
const requiredTemplate = `{{- $s := lookup "v1" "Secret" .Release.Namespace "db" }}
  password: {{ required "the Secret db must exist" (dig "data" "password" "" $s) }}
`

// releaseTemplate shows .Release.
const releaseTemplate = `  isInstall: {{ .Release.IsInstall | quote }}
  isUpgrade: {{ .Release.IsUpgrade | quote }}
  revision: {{ .Release.Revision | quote }}
`
