package helm

import (
	"slices"
	"testing"
	"testing/fstest"
)

// widgetCRD is a CRD of widgets.example.com serving version.
func widgetCRD(version string) string {
	return "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n" +
		"spec:\n  group: example.com\n  names: {kind: Widget, plural: widgets}\n  scope: Namespaced\n" +
		"  versions:\n  - name: " + version + "\n    served: true\n    storage: true\n    schema: {openAPIV3Schema: {type: object}}\n"
}

// TestSubchartsAsHelmInstalls: umbrella charts helm install takes are
// taken, with the objects it installs.
func TestSubchartsAsHelmInstalls(t *testing.T) {
	op := files(
		"charts/op/Chart.yaml", "apiVersion: v2\nname: op\nversion: 0.1.0\n",
		"charts/op/crds/widgets.yaml", widgetCRD("v1"),
		"charts/op/templates/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-{{ .Chart.Name }}\n",
	)
	tests := []struct {
		name string
		fsys fstest.MapFS
		want []string
	}{{
		name: "one subchart under two aliases ships its CRD once",
		fsys: with(op, files("Chart.yaml", "apiVersion: v2\nname: umbrella\nversion: 0.1.0\ndependencies:\n"+
			"- {name: op, version: 0.1.0, alias: op-a}\n- {name: op, version: 0.1.0, alias: op-b}\n")),
		want: []string{"CustomResourceDefinition widgets.example.com", "ConfigMap rel-op-a", "ConfigMap rel-op-b"},
	}, {
		name: "a parent and its subchart ship the same CRD",
		fsys: with(op, files("Chart.yaml", "apiVersion: v2\nname: umbrella\nversion: 0.1.0\ndependencies: [{name: op, version: 0.1.0}]\n",
			"crds/widgets.yaml", widgetCRD("v1"))),
		want: []string{"CustomResourceDefinition widgets.example.com", "ConfigMap rel-op"},
	}, {
		name: "a subchart packaged without its disabled dependency",
		fsys: with(op, files("Chart.yaml", "apiVersion: v2\nname: umbrella\nversion: 0.1.0\ndependencies: [{name: op, version: 0.1.0}]\n",
			"charts/op/Chart.yaml", "apiVersion: v2\nname: op\nversion: 0.1.0\n"+
				"dependencies: [{name: postgresql, version: 1.0.0, condition: postgresql.enabled}]\n",
			"charts/op/values.yaml", "postgresql: {enabled: false}\n")),
		want: []string{"CustomResourceDefinition widgets.example.com", "ConfigMap rel-op"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := objects(t, tt.fsys, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range objs {
				got = append(got, o.GetKind()+" "+o.GetName())
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("objects %q, want %q", got, tt.want)
			}
		})
	}
}
