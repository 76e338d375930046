package helm

import (
	"bytes"
	"context"
	"testing"
	"testing/fstest"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// blockScalarChart ends documents with block scalars: the last line
// break of such a value depends on what follows the document.
var blockScalarChart = files(
	"Chart.yaml", "apiVersion: v2\nname: scalars\nversion: 0.1.0\n",
	// The file's last document ends without a line break.
	"templates/last.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: last\ndata:\n  clip: |\n    echo hi",
	// A document followed by another, kept (|+) and clipped (|).
	"templates/middle.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: middle\ndata:\n  keep: |+\n    x\n---\n"+
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: after\ndata:\n  clip: |\n    y\n",
	// The file's last document ends with a line break.
	"templates/kept.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kept\ndata:\n  keep: |+\n    v\n",
	// A hook is installed from its own document, with and without a
	// line break at its end.
	"templates/hook.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hook\n  annotations:\n    helm.sh/hook: pre-install\ndata:\n  clip: |\n    z",
	"templates/hook-kept.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hook-kept\n  annotations:\n    helm.sh/hook: pre-install\ndata:\n  keep: |+\n    w\n",
)

// TestBlockScalarsAsHelmInstalls: each object's data is what helm install
// sends for the chart (the release manifest, documents joined each with
// a line break after it, and each hook's own document), computed here
// with the Helm SDK.
func TestBlockScalarsAsHelmInstalls(t *testing.T) {
	objs, err := objects(t, blockScalarChart, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]any{}
	for _, o := range objs {
		data, _, _ := unstructured.NestedMap(o.Object, "data")
		got[o.GetName()] = data
	}
	want := helmInstalled(t, blockScalarChart)
	if len(want) != 6 {
		t.Fatalf("the Helm SDK installs %d objects, want 6", len(want))
	}
	for name, data := range want {
		for k, v := range data {
			if got[name][k] != v {
				t.Errorf("%s data.%s = %q, helm install sends %q", name, k, got[name][k], v)
			}
		}
	}
}

// helmInstalled renders fsys with the Helm SDK (a client-only dry run of
// helm install) and decodes what helm install sends, by object name: the
// release manifest and each hook's own document.
func helmInstalled(t *testing.T, fsys fstest.MapFS) map[string]map[string]any {
	t.Helper()
	var bufs []*archive.BufferedFile
	for name, f := range fsys {
		bufs = append(bufs, &archive.BufferedFile{Name: name, Data: f.Data})
	}
	ch, err := loader.LoadFiles(bufs)
	if err != nil {
		t.Fatal(err)
	}
	in := action.NewInstall(&action.Configuration{})
	in.DryRunStrategy = action.DryRunClient
	in.ReleaseName, in.Namespace, in.Replace = "rel", "ns", true
	r, err := in.RunWithContext(context.Background(), ch, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	rel := r.(*releasev1.Release)
	streams := []string{rel.Manifest}
	for _, h := range rel.Hooks {
		streams = append(streams, h.Manifest)
	}
	out := map[string]map[string]any{}
	for _, stream := range streams {
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewBufferString(stream), 4096)
		for {
			var u unstructured.Unstructured
			if err := dec.Decode(&u.Object); err != nil {
				break
			}
			if u.Object == nil {
				continue
			}
			data, _, _ := unstructured.NestedMap(u.Object, "data")
			out[u.GetName()] = data
		}
	}
	return out
}
