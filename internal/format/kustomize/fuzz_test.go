package kustomize

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// FuzzBuild feeds arbitrary bytes as the root kustomization of a bundle
// that also has a base, a component and plugin configurations to refer to:
// the result must be objects with a kind and a name, or a terminal failure
// of a known reason, never a panic, a request or a git process.
func FuzzBuild(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("..", "plain", "testdata", "bundles", "kustomize-*", "*", "kustomization.yaml"))
	roots, _ := filepath.Glob(filepath.Join("..", "plain", "testdata", "bundles", "kustomize-*", "kustomization.yaml"))
	for _, s := range append(seeds, roots...) {
		if data, err := os.ReadFile(s); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{"", "resources: [cm.yaml]", "resources: [base]\nnamePrefix: p-", "components: [comp]\nresources: [cm.yaml]",
		"resources: [https://example.com/x.yaml]", "resources: [github.com/org/repo]", "transformers: [t.yaml]\nresources: [cm.yaml]",
		"generators:\n- |\n  apiVersion: builtin\n  kind: ConfigMapGenerator\n  metadata: {name: g}\n  literals: [a=b]",
		"resources: [../x]", "resources: [/bundle/cm.yaml]", "resources: [., base, base]", "\xff", "{", "&a [*a, *a]",
		"patches: [{path: p.yaml}]\nresources: [cm.yaml]", "helmCharts: [{name: x}]"} {
		f.Add([]byte(s))
	}
	h := newHostile(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := fstest.MapFS{
			"kustomization.yaml":      file(string(data)),
			"cm.yaml":                 file(cm("a")),
			"p.yaml":                  file("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n"),
			"t.yaml":                  file("apiVersion: builtin\nkind: PrefixTransformer\nmetadata: {name: t}\nprefix: t-\nfieldSpecs: [{path: metadata/name}]\n"),
			"base/kustomization.yaml": file("resources: [cm.yaml]\n"),
			"base/cm.yaml":            file(cm("b")),
			"comp/kustomization.yaml": file("apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nnameSuffix: -c\n"),
		}
		objs, err := Build(context.Background(), fsys, testLimits)
		if err != nil {
			switch r := failure.Reason(err, ""); r {
			case v1alpha2.ReasonInvalidContent, v1alpha2.ReasonUnsupportedFeature, v1alpha2.ReasonRenderFailed:
			default:
				t.Fatalf("error %v has reason %q", err, r)
			}
		}
		for _, o := range objs {
			if o.GetKind() == "" || o.GetAPIVersion() == "" {
				t.Fatalf("object without apiVersion or kind: %v", o.Object)
			}
		}
		if n := h.hits.Load(); n != 0 {
			t.Fatalf("%d requests left the build", n)
		}
		if h.gitRan() {
			t.Fatal("git was run")
		}
	})
}
