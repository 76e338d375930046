package kustomize

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"sigs.k8s.io/kustomize/api/krusty"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// hostile serves a ConfigMap for any path and counts requests, and puts a
// fake git first on PATH that records being run, so that a test sees any
// attempt to fetch or clone without reaching the network.
type hostile struct {
	url    string
	hits   *atomic.Int64
	marker string
}

// newHostile starts the server, installs the fake git and sends every
// proxied request (any host but this one) to the server too.
func newHostile(t testing.TB) hostile {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(cm("fetched")))
	}))
	t.Cleanup(srv.Close)
	bin := t.TempDir()
	marker := filepath.Join(t.TempDir(), "git-ran")
	script := "#!/bin/sh\n: > '" + marker + "'\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	t.Setenv("HTTP_PROXY", srv.URL)
	t.Setenv("HTTPS_PROXY", srv.URL)
	t.Setenv("NO_PROXY", "")
	return hostile{url: srv.URL, hits: &hits, marker: marker}
}

// gitRan reports whether the fake git was run.
func (h hostile) gitRan() bool {
	_, err := os.Stat(h.marker)
	return err == nil
}

// TestRemoteNeverReached builds hostile kustomizations whose every path
// field points at a local server or a git repository: each must fail fast,
// before any request or any git process.
func TestRemoteNeverReached(t *testing.T) {
	h := newHostile(t)
	u := h.url
	plugin := func(field, body string) string {
		return field + ":\n- |\n  " + strings.ReplaceAll(body, "\n", "\n  ") + "\n"
	}
	cases := map[string]fstest.MapFS{
		"resources file":   kust("resources:\n- " + u + "/cm.yaml\n"),
		"resources dir":    {"kustomization.yaml": file("resources:\n- " + u + "/base\n")},
		"github shorthand": {"kustomization.yaml": file("resources:\n- github.com/rukpak/none//base?ref=v1\n")},
		"scp git":          {"kustomization.yaml": file("resources:\n- git@github.com:rukpak/none.git\n")},
		"forced git":       {"kustomization.yaml": file("resources:\n- git::" + u + "/repo.git\n")},
		"upper case":       {"kustomization.yaml": file("resources:\n- " + strings.ToUpper(u) + "/cm.yaml\n")},
		"leading blank":    {"kustomization.yaml": file("resources:\n- \" " + u + "/cm.yaml\"\n")},
		"components":       kust("components:\n- " + u + "/comp\n"),
		"bases":            {"kustomization.yaml": file("bases:\n- " + u + "/base?ref=main\n")},
		"patches":          kust("patches:\n- path: " + u + "/p.yaml\n"),
		"strategic merge":  kust("patchesStrategicMerge:\n- " + u + "/p.yaml\n"),
		"json6902":         kust("patchesJson6902:\n- path: " + u + "/ops.yaml\n  target: {kind: ConfigMap, name: a}\n"),
		"crds":             kust("crds:\n- " + u + "/crd.yaml\n"),
		"configurations":   kust("configurations:\n- " + u + "/conf.yaml\n"),
		"openapi":          kust("openapi:\n  path: " + u + "/schema.json\n"),
		"replacements":     kust("replacements:\n- path: " + u + "/r.yaml\n"),
		"generator files":  kust("configMapGenerator:\n- name: g\n  files:\n  - k=" + u + "/f\n"),
		"generator envs":   kust("configMapGenerator:\n- name: g\n  envs:\n  - " + u + "/env\n"),
		"secret env":       kust("secretGenerator:\n- name: s\n  env: " + u + "/env\n"),
		"transformer file": kust("transformers:\n- " + u + "/t.yaml\n"),
		"validator file":   kust("validators:\n- " + u + "/v.yaml\n"),
		"inline value add": kust(plugin("transformers", "apiVersion: builtin\nkind: ValueAddTransformer\nmetadata: {name: v}\nvalue: x\ntargetFilePath: "+u+"/x")),
		"inline generator": kust(plugin("generators", "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata: {name: g}\nfiles: ["+u+"/f]")),
		"inline replacement": kust(plugin("transformers", "apiVersion: builtin\nkind: ReplacementTransformer\nmetadata: {name: r}\n"+
			"replacements:\n- path: "+u+"/r.yaml")),
		"inline strategic merge": kust(plugin("transformers", "apiVersion: builtin\nkind: PatchStrategicMergeTransformer\n"+
			"metadata: {name: p}\npaths: ["+u+"/p.yaml]")),
		"transformer file naming a URL": with(kust("transformers: [t.yaml]\n"), fstest.MapFS{
			"t.yaml": file("apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: p}\npath: " + u + "/p.yaml\n")}),
		"transformers built by a kustomization": with(kust("transformers: [t]\n"), fstest.MapFS{
			"t/kustomization.yaml": file("resources: [t.yaml]\npatches:\n- patch: |\n    - {op: add, path: /targetFilePath, value: \"" + u + "/x\"}\n" +
				"  target: {kind: ValueAddTransformer}\n"),
			"t/t.yaml": file("apiVersion: builtin\nkind: ValueAddTransformer\nmetadata: {name: v}\nvalue: x\n")}),
		"in a base": {
			"kustomization.yaml":      file("resources: [base]\n"),
			"base/kustomization.yaml": file("resources:\n- " + u + "/cm.yaml\n"),
		},
		"in a component": with(kust("components: [comp]\n"), fstest.MapFS{
			"comp/kustomization.yaml": file("apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources:\n- " + u + "/cm.yaml\n")}),
	}
	for name, fsys := range cases {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			objs, err := Build(context.Background(), fsys, testLimits)
			if err == nil {
				t.Fatalf("Build() = %s, want an error", names(objs))
			}
			if r := failure.Reason(err, ""); r != v1alpha2.ReasonInvalidContent && r != v1alpha2.ReasonUnsupportedFeature {
				t.Errorf("reason = %q, want a refusal before the build (err: %v)", r, err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("Build() took %v, want it to fail fast", d)
			}
		})
	}
	if n := h.hits.Load(); n != 0 {
		t.Errorf("the server got %d requests, want none", n)
	}
	if h.gitRan() {
		t.Error("git was run")
	}
}

// TestHostileHarness checks that the harness sees a fetch and a clone:
// krusty alone, without Build's checks, does fetch a URL resource and run
// git for a repository, even with the options Build uses.
func TestHostileHarness(t *testing.T) {
	h := newHostile(t)
	b := newBundle(context.Background(), fstest.MapFS{"kustomization.yaml": file("resources:\n- " + h.url + "/cm.yaml\n")}, testLimits)
	if _, err := krusty.MakeKustomizer(options()).Run(fileSystem{b: b}, mountDir); err != nil {
		t.Fatalf("krusty alone: %v", err)
	}
	if h.hits.Load() == 0 {
		t.Fatal("the server saw no request: the harness cannot tell a fetch")
	}
	b = newBundle(context.Background(), fstest.MapFS{"kustomization.yaml": file("resources:\n- github.com/rukpak/none//base?ref=v1\n")}, testLimits)
	if _, err := krusty.MakeKustomizer(options()).Run(fileSystem{b: b}, mountDir); err == nil {
		t.Fatal("krusty alone cloned with a fake git")
	} else {
		t.Logf("krusty alone: %v", err)
	}
	if !h.gitRan() {
		t.Fatal("the fake git did not run: the harness cannot tell a clone")
	}
}
