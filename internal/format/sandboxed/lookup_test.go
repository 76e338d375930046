package sandboxed

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"testing"

	"github.com/rukpak/rukpak/internal/sandbox"
	"github.com/rukpak/rukpak/pkg/format"
)

// lookupChart reads a Secret and a list of ConfigMaps, and shows the
// release it renders for.
var lookupChart = chart("reader", `{{- $s := lookup "v1" "Secret" .Release.Namespace "db" }}
{{- $l := lookup "v1" "ConfigMap" "" "" }}
apiVersion: v1
kind: ConfigMap
metadata: {name: seen}
data:
  password: {{ if $s }}{{ index $s.data "password" | quote }}{{ else }}"none"{{ end }}
  configMaps: {{ len ($l.items | default list) | quote }}
  isUpgrade: {{ .Release.IsUpgrade | quote }}
  revision: {{ .Release.Revision | quote }}
`, "")

// A render that needs the answers of lookups returns *format.LookupsNeeded
// naming them, from a child as from this process; with the answers, and
// the release, in Config (which crosses to the child as JSON) it renders
// with them; offline (nil Lookups) it renders with empty answers.
func TestLookupsCrossTheChildBoundary(t *testing.T) {
	secret := format.LookupQuery{APIVersion: "v1", Kind: "Secret", Namespace: "ns", Name: "db"}
	list := format.LookupQuery{APIVersion: "v1", Kind: "ConfigMap"}
	answers := map[string]json.RawMessage{
		secret.Key(): json.RawMessage(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db"},"data":{"password":"czNjcmV0"}}`),
		list.Key():   json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMapList","items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}`),
	}
	dir := writeFiles(t, lookupChart)
	for _, runner := range []*sandbox.Runner{newRunner(t, testLimits), nil} {
		where := map[bool]string{true: " in a child", false: " in process"}[runner != nil]
		f := newFormat(t, Helm, runner)
		t.Run("needed"+where, func(t *testing.T) {
			_, err := f.Objects(context.Background(), os.DirFS(dir), format.Config{
				ReleaseName: "rel", InstallNamespace: "ns", Lookups: map[string]json.RawMessage{}})
			var needed *format.LookupsNeeded
			if !errors.As(err, &needed) {
				t.Fatalf("error %v (%T), want *format.LookupsNeeded", err, err)
			}
			if want := []format.LookupQuery{secret, list}; !reflect.DeepEqual(needed.Queries, want) {
				t.Fatalf("queries %v, want %v", needed.Queries, want)
			}
		})
		t.Run("answered"+where, func(t *testing.T) {
			objs, err := f.Objects(context.Background(), os.DirFS(dir), format.Config{
				ReleaseName: "rel", InstallNamespace: "ns", Lookups: answers,
				Release: format.Release{IsUpgrade: true, Revision: 4}})
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"password": "czNjcmV0", "configMaps": "2", "isUpgrade": "true", "revision": "4"}
			if got := objs[0].Object["data"]; !reflect.DeepEqual(got, want) {
				t.Fatalf("data %v, want %v", got, want)
			}
		})
		t.Run("offline"+where, func(t *testing.T) {
			objs, err := f.Objects(context.Background(), os.DirFS(dir), format.Config{ReleaseName: "rel", InstallNamespace: "ns"})
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"password": "none", "configMaps": "0", "isUpgrade": "false", "revision": "1"}
			if got := objs[0].Object["data"]; !reflect.DeepEqual(got, want) {
				t.Fatalf("data %v, want %v", got, want)
			}
		})
	}
}
