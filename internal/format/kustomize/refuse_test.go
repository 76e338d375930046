package kustomize

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// kust returns a kustomization with resources cm.yaml and more, and the
// cm.yaml it lists.
func kust(more string) fstest.MapFS {
	return fstest.MapFS{
		"kustomization.yaml": file("resources: [cm.yaml]\n" + more),
		"cm.yaml":            file(cm("a")),
	}
}

// with returns fsys with the files of more added.
func with(fsys fstest.MapFS, more fstest.MapFS) fstest.MapFS {
	for k, v := range more {
		fsys[k] = v
	}
	return fsys
}

// layers returns n levels of directories l0..l(n-1), each using the one
// below twice under two prefixes, so that the build of l(n-1) reads the
// ConfigMap of l0 2^(n-1) times.
func layers(n int) fstest.MapFS {
	fsys := fstest.MapFS{
		"kustomization.yaml":    file(fmt.Sprintf("resources: [l%d]\n", n-1)),
		"l0/kustomization.yaml": file("resources: [cm.yaml]\n"),
		"l0/cm.yaml":            file(cm("a")),
	}
	for i := 1; i < n; i++ {
		dir := fmt.Sprintf("l%d", i)
		fsys[dir+"/kustomization.yaml"] = file("resources: [a, b]\n")
		for _, sub := range []string{"a", "b"} {
			fsys[dir+"/"+sub+"/kustomization.yaml"] = file(fmt.Sprintf("namePrefix: %s-\nresources: [../../l%d]\n", sub, i-1))
		}
	}
	return fsys
}

func TestBuildRefusals(t *testing.T) {
	tests := []struct {
		name   string
		fsys   fstest.MapFS
		limits Limits
		reason string
		want   []string
	}{
		// Remote references.
		{
			name:   "remote base as a URL",
			fsys:   fstest.MapFS{"kustomization.yaml": file("resources:\n- https://github.com/kubernetes-sigs/kustomize//examples/helloWorld?ref=v5.0.0\n")},
			reason: v1alpha2.ReasonInvalidContent,
			want:   []string{"kustomization.yaml: resources entry \"https://github.com/kubernetes-sigs/kustomize//examples/helloWorld?ref=v5.0.0\"", "remote reference"},
		},
		{
			name:   "remote base as github.com/org/repo",
			fsys:   fstest.MapFS{"kustomization.yaml": file("resources:\n- github.com/org/repo/deploy?ref=v1\n")},
			reason: v1alpha2.ReasonInvalidContent,
			want:   []string{"kustomization.yaml: resources entry \"github.com/org/repo/deploy?ref=v1\"", "remote reference"},
		},
		{
			name:   "SCP-style git component",
			fsys:   kust("components: [\"git@github.com:org/repo.git//comp\"]\n"),
			reason: v1alpha2.ReasonInvalidContent,
			want:   []string{"kustomization.yaml: components entry \"git@github.com:org/repo.git//comp\"", "remote reference"},
		},
		{
			name:   "deprecated bases field",
			fsys:   kust("bases: [ssh://git@example.com/repo.git]\n"),
			reason: v1alpha2.ReasonInvalidContent,
			want:   []string{"kustomization.yaml: bases entry \"ssh://git@example.com/repo.git\""},
		},
		{
			name: "remote entry in a base names the base's file",
			fsys: fstest.MapFS{
				"kustomization.yaml":      file("resources: [base]\n"),
				"base/kustomization.yaml": file("resources: [cm.yaml, \"https://example.com/x.yaml\"]\n"),
				"base/cm.yaml":            file(cm("a")),
			},
			reason: v1alpha2.ReasonInvalidContent,
			want:   []string{"base/kustomization.yaml: resources entry \"https://example.com/x.yaml\""},
		},
		{
			name:   "remote patch file",
			fsys:   kust("patches:\n- path: https://example.com/p.yaml\n"),
			reason: v1alpha2.ReasonInvalidContent,
			want:   []string{"kustomization.yaml: patches[0].path entry \"https://example.com/p.yaml\""},
		},
		{
			name:   "remote configMapGenerator file",
			fsys:   kust("configMapGenerator:\n- name: g\n  files: [key=https://example.com/f]\n"),
			reason: v1alpha2.ReasonInvalidContent,
			want:   []string{"kustomization.yaml: configMapGenerator[0].files entry \"key=https://example.com/f\""},
		},
		{
			name: "remote file in an inline builtin transformer",
			fsys: kust("transformers:\n- |\n  apiVersion: builtin\n  kind: ValueAddTransformer\n  metadata: {name: v}\n" +
				"  value: x\n  targetFilePath: https://example.com/x\n"),
			reason: v1alpha2.ReasonInvalidContent,
			want:   []string{"kustomization.yaml: transformers (inline): ValueAddTransformer v: targetFilePath entry \"https://example.com/x\""},
		},
		{
			name: "remote file in a transformer file",
			fsys: with(kust("transformers: [t.yaml]\n"), fstest.MapFS{"t.yaml": file(
				"apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: p}\npath: HTTP://example.com/p.yaml\n")}),
			reason: v1alpha2.ReasonInvalidContent,
			want:   []string{"kustomization.yaml: transformers entry \"t.yaml\": PatchTransformer p: path entry \"HTTP://example.com/p.yaml\""},
		},
		// Paths out of the bundle or the kustomization's directory.
		{
			name:   "../ leaving the bundle",
			fsys:   fstest.MapFS{"kustomization.yaml": file("resources: [cm.yaml, ../outside]\n"), "cm.yaml": file(cm("a"))},
			reason: v1alpha2.ReasonInvalidContent,
			want:   []string{"kustomization.yaml: resources entry \"../outside\" leaves the bundle"},
		},
		{
			name:   "absolute path",
			fsys:   kust("patches: [{path: /etc/passwd}]\n"),
			reason: v1alpha2.ReasonInvalidContent,
			want:   []string{"kustomization.yaml: patches[0].path entry \"/etc/passwd\" is an absolute path"},
		},
		{
			name: "../ leaving the kustomization's directory (load restrictions)",
			fsys: fstest.MapFS{
				"kustomization.yaml":         file("resources: [overlay]\n"),
				"overlay/kustomization.yaml": file("resources: [../base/cm.yaml]\n"),
				"base/cm.yaml":               file(cm("a")),
			},
			reason: v1alpha2.ReasonRenderFailed,
			want:   []string{"kustomization.yaml: kustomize build failed", "../base/cm.yaml", "security; file 'base/cm.yaml' is not in or below 'overlay'"},
		},
		// Plugins and Helm.
		{
			name: "exec plugin configuration",
			fsys: with(kust("transformers: [sed.yaml]\n"), fstest.MapFS{
				"sed.yaml": file("apiVersion: someteam.example.com/v1\nkind: SedTransformer\nmetadata: {name: s}\nargsOneLiner: s/a/b/\n"),
			}),
			reason: v1alpha2.ReasonUnsupportedFeature,
			want:   []string{"kustomization.yaml: transformers entry \"sed.yaml\": someteam.example.com/v1 SedTransformer", "only kustomize's builtin plugins"},
		},
		{
			name: "function configuration",
			fsys: kust("generators:\n- |\n  apiVersion: example.com/v1\n  kind: Gen\n  metadata:\n    name: g\n    annotations:\n" +
				"      config.kubernetes.io/function: |\n        container: {image: example.com/gen:v1}\n"),
			reason: v1alpha2.ReasonUnsupportedFeature,
			want:   []string{"kustomization.yaml: generators (inline): example.com/v1 Gen", "only kustomize's builtin plugins"},
		},
		{
			name: "plugin configurations built from a directory",
			fsys: with(kust("transformers: [plugins]\n"), fstest.MapFS{
				"plugins/kustomization.yaml": file("resources: [t.yaml]\n"),
				"plugins/t.yaml":             file("apiVersion: builtin\nkind: PrefixTransformer\nmetadata: {name: p}\nprefix: x-\n"),
			}),
			reason: v1alpha2.ReasonUnsupportedFeature,
			want:   []string{"kustomization.yaml: transformers entry \"plugins\" is a directory"},
		},
		{
			name:   "helmCharts field",
			fsys:   kust("helmCharts:\n- name: minecraft\n  repo: https://itzg.github.io/minecraft-server-charts\n  version: 3.1.3\n"),
			reason: v1alpha2.ReasonUnsupportedFeature,
			want:   []string{"kustomization.yaml: helmCharts", "not supported"},
		},
		{
			name:   "HelmChartInflationGenerator configuration",
			fsys:   kust("generators:\n- |\n  apiVersion: builtin\n  kind: HelmChartInflationGenerator\n  metadata: {name: h}\n  chartName: x\n"),
			reason: v1alpha2.ReasonUnsupportedFeature,
			want:   []string{"kustomization.yaml: generators (inline): HelmChartInflationGenerator", "not supported"},
		},
		// Content and limits.
		{
			name: "symlink the build reaches",
			fsys: with(kust("resources: [base]\n"), fstest.MapFS{
				"base/kustomization.yaml": file("resources: [link.yaml]\n"),
				"base/link.yaml":          &fstest.MapFile{Data: []byte("../cm.yaml"), Mode: fs.ModeSymlink},
			}),
			reason: v1alpha2.ReasonInvalidContent,
			want:   []string{"base/link.yaml: not a regular file"},
		},
		{
			name: "file below a symlinked directory",
			fsys: with(kust("patches: [{path: linked/p.yaml}]\n"), fstest.MapFS{
				"linked": &fstest.MapFile{Data: []byte("/etc"), Mode: fs.ModeSymlink},
			}),
			reason: v1alpha2.ReasonInvalidContent,
			want:   []string{"linked: not a regular file"},
		},
		{
			name:   "symlinked kustomization",
			fsys:   fstest.MapFS{"kustomization.yaml": &fstest.MapFile{Data: []byte("/etc/k.yaml"), Mode: fs.ModeSymlink}},
			reason: v1alpha2.ReasonInvalidContent,
			want:   []string{"kustomization.yaml: not a regular file"},
		},
		{
			name:   "file over the size limit",
			fsys:   with(kust("resources: [big.yaml]\n"), fstest.MapFS{"big.yaml": file(strings.Repeat("x", 101))}),
			limits: Limits{MaxFileBytes: 100, MaxTotalBytes: 1000, MaxFiles: 10},
			reason: v1alpha2.ReasonInvalidContent,
			want:   []string{"big.yaml: file is over the limit of 100 bytes per file"},
		},
		{
			name: "build over the total size limit",
			fsys: with(kust("configMapGenerator: [{name: g, files: [z1, z2]}]\n"),
				fstest.MapFS{"z1": file(strings.Repeat("x", 90)), "z2": file(strings.Repeat("x", 90))}),
			limits: Limits{MaxFileBytes: 100, MaxTotalBytes: 200, MaxFiles: 10},
			reason: v1alpha2.ReasonInvalidContent,
			want:   []string{"kustomization.yaml: the build reads more than 200 bytes"},
		},
		{
			name:   "too many files",
			fsys:   with(kust("configMapGenerator: [{name: g, files: [x1, x2]}]\n"), fstest.MapFS{"x1": file(""), "x2": file("")}),
			limits: Limits{MaxFileBytes: 100, MaxTotalBytes: 1000, MaxFiles: 3},
			reason: v1alpha2.ReasonInvalidContent,
			want:   []string{"kustomization.yaml: the build reads more than 3 files"},
		},
		{
			name:   "a base used an exponential number of times",
			fsys:   layers(40),
			reason: v1alpha2.ReasonInvalidContent,
			want:   []string{"kustomization.yaml: the build reads more than 1000 files, counting a base once per use"},
		},
		// Build failures.
		{
			name:   "malformed kustomization",
			fsys:   fstest.MapFS{"kustomization.yaml": file("resources: [\n")},
			reason: v1alpha2.ReasonRenderFailed,
			want:   []string{"kustomization.yaml: kustomize build failed: invalid Kustomization"},
		},
		{
			name:   "unknown field",
			fsys:   kust("namePrefx: a-\n"),
			reason: v1alpha2.ReasonRenderFailed,
			want:   []string{"kustomization.yaml: kustomize build failed", `unknown field "namePrefx"`},
		},
		{
			name:   "missing resource file",
			fsys:   fstest.MapFS{"kustomization.yaml": file("resources: [missing.yaml]\n")},
			reason: v1alpha2.ReasonRenderFailed,
			want:   []string{"kustomization.yaml: kustomize build failed", "'missing.yaml' doesn't exist"},
		},
		{
			name: "malformed resource in a base",
			fsys: fstest.MapFS{
				"kustomization.yaml":      file("resources: [base]\n"),
				"base/kustomization.yaml": file("resources: [cm.yaml]\n"),
				"base/cm.yaml":            file("a: [\n"),
			},
			reason: v1alpha2.ReasonRenderFailed,
			want:   []string{"kustomization.yaml: kustomize build failed", "path 'base'", "in File: cm.yaml"},
		},
		{
			name: "cycle",
			fsys: fstest.MapFS{
				"kustomization.yaml":   file("resources: [a]\n"),
				"a/kustomization.yaml": file("resources: [../b]\n"),
				"b/kustomization.yaml": file("resources: [../a]\n"),
			},
			reason: v1alpha2.ReasonRenderFailed,
			want:   []string{"cycle detected"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			limits := tt.limits
			if limits == (Limits{}) {
				limits = testLimits
			}
			objs, err := Build(context.Background(), tt.fsys, limits)
			if err == nil {
				t.Fatalf("Build() = %s, want an error", names(objs))
			}
			t.Logf("error: %v", err)
			if got := failure.Reason(err, "NotTerminal"); got != tt.reason {
				t.Errorf("reason = %s, want %s", got, tt.reason)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestBuildCountsBasesPerUse(t *testing.T) {
	objs, err := Build(context.Background(), layers(4), testLimits)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 8 {
		t.Fatalf("objects = %s, want 8", names(objs))
	}
	// l0 reads 2 files, l(i) reads its own, its a/b files and l(i-1)
	// twice: l1 7, l2 17, l3 37, and the root 38.
	if _, err := Build(context.Background(), layers(4), Limits{MaxFileBytes: 1 << 20, MaxTotalBytes: 1 << 20, MaxFiles: 37}); err == nil ||
		!strings.Contains(err.Error(), "the build reads more than 37 files") {
		t.Fatalf("error = %v, want the build over 37 files", err)
	}
	if _, err := Build(context.Background(), layers(4), Limits{MaxFileBytes: 1 << 20, MaxTotalBytes: 1 << 20, MaxFiles: 38}); err != nil {
		t.Fatalf("error = %v at exactly the limit", err)
	}
}

func TestIsRemote(t *testing.T) {
	tests := []struct {
		entry string
		want  bool
	}{
		{"https://example.com/x.yaml", true},
		{"HTTP://example.com/x.yaml", true},
		{"  http://example.com/x.yaml", true},
		{"https:example.com", true},
		{"file:///etc/passwd", true},
		{"git::https://example.com/repo.git", true},
		{"ssh://git@example.com/repo.git", true},
		{"git@github.com:org/repo.git", true},
		{"github.com/org/repo?ref=v1", true},
		{"GitHub.com:org/repo", true},
		{"gitlab.com/org/repo//x?ref=v1", false},
		{"example.com/org/repo.git", false},
		{"k=https://example.com", true},
		{"base", false},
		{"../base", false},
		{"github.com.yaml", false},
		{"config.yaml", false},
		{"a@b.yaml", true},
	}
	for _, tt := range tests {
		if got := isRemote(tt.entry); got != tt.want {
			t.Errorf("isRemote(%q) = %v, want %v", tt.entry, got, tt.want)
		}
	}
}
