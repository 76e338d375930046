package kustomize

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rukpak/rukpak/pkg/failure"
)

// testLimits are generous limits for tests that do not test limits.
var testLimits = Limits{MaxFileBytes: 1 << 20, MaxTotalBytes: 1 << 24, MaxFiles: 1000}

// cm returns a ConfigMap manifest.
func cm(name string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n"
}

// file returns a MapFS file holding s.
func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

// names returns "Kind/name" of each object.
func names(objs []*unstructured.Unstructured) string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+"/"+o.GetName())
	}
	return strings.Join(out, ",")
}

func TestBuild(t *testing.T) {
	tests := []struct {
		name string
		fsys fstest.MapFS
		want string
	}{
		{
			name: "resources in kustomize's default order",
			fsys: fstest.MapFS{
				"kustomization.yaml": file("resources: [cm.yaml, ns.yaml]\n"),
				"cm.yaml":            file(cm("a")),
				"ns.yaml":            file("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n"),
			},
			want: "Namespace/team,ConfigMap/a",
		},
		{
			name: "sortOptions of the kustomization",
			fsys: fstest.MapFS{
				"kustomization.yaml": file("sortOptions: {order: fifo}\nresources: [cm.yaml, ns.yaml]\n"),
				"cm.yaml":            file(cm("a")),
				"ns.yaml":            file("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n"),
			},
			want: "ConfigMap/a,Namespace/team",
		},
		{
			name: "kustomization.yml and a base",
			fsys: fstest.MapFS{
				"kustomization.yml":          file("namePrefix: p-\nresources: [base]\n"),
				"base/Kustomization":         file("resources: [cm.yaml]\n"),
				"base/cm.yaml":               file(cm("a")),
				"manifests/ignored.yaml":     file(cm("ignored")),
				"unreferenced/kustomization": file("resources: [https://example.com/x.yaml]\n"),
			},
			want: "ConfigMap/p-a",
		},
		{
			name: "inline builtin transformer",
			fsys: fstest.MapFS{
				"kustomization.yaml": file("resources: [cm.yaml]\ntransformers:\n- |\n  apiVersion: builtin\n  kind: PrefixSuffixTransformer\n" +
					"  metadata: {name: s}\n  suffix: -x\n  fieldSpecs: [{path: metadata/name}]\n"),
				"cm.yaml": file(cm("a")),
			},
			want: "ConfigMap/a-x",
		},
		{
			// metrics-server's repository has components/high-availability-1.21+.
			name: "names kustomize's in-memory file system refuses, reached and not",
			fsys: fstest.MapFS{
				"kustomization.yaml":                                    file("resources: [base-1.21+]\ncomponents: [components/ha-1.21+]\n"),
				"base-1.21+/kustomization.yaml":                         file("resources: [cm a+b.yaml]\n"),
				"base-1.21+/cm a+b.yaml":                                file(cm("a")),
				"components/ha-1.21+/kustomization.yaml":                file("apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nnamePrefix: ha-\n"),
				"components/high-availability-1.21+/kustomization.yaml": file("resources: [missing.yaml]\n"),
				"docs/ünïcode (draft)~.md":                              file("# notes\n"),
			},
			want: "ConfigMap/ha-a",
		},
		{
			name: "what the build does not reach is not read",
			fsys: fstest.MapFS{
				"kustomization.yaml":   file("resources: [cm.yaml]\n"),
				"cm.yaml":              file(cm("a")),
				"hack/link":            &fstest.MapFile{Data: []byte("/etc/passwd"), Mode: fs.ModeSymlink},
				"hack/fifo":            &fstest.MapFile{Mode: fs.ModeNamedPipe},
				"testdata/big.bin":     file(strings.Repeat("x", int(testLimits.MaxFileBytes)+1)),
				"testdata/broken.yaml": file("a: [\n"),
				"linked":               &fstest.MapFile{Data: []byte("/etc"), Mode: fs.ModeSymlink},
			},
			want: "ConfigMap/a",
		},
		{
			name: "empty directories",
			fsys: fstest.MapFS{
				"kustomization.yaml": file("resources: [cm.yaml]\n"),
				"cm.yaml":            file(cm("a")),
				"empty":              &fstest.MapFile{Mode: fs.ModeDir | 0o755},
			},
			want: "ConfigMap/a",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Build(context.Background(), tt.fsys, testLimits)
			if err != nil {
				t.Fatalf("Build() error = %v", err)
			}
			if got := names(objs); got != tt.want {
				t.Errorf("objects = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestBuildKeepsIntegers(t *testing.T) {
	fsys := fstest.MapFS{
		"kustomization.yaml": file("resources: [d.yaml]\nreplicas: [{name: d, count: 3}]\n"),
		"d.yaml":             file("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  replicas: 1\n"),
	}
	objs, err := Build(context.Background(), fsys, testLimits)
	if err != nil {
		t.Fatal(err)
	}
	if n, found, err := unstructured.NestedInt64(objs[0].Object, "spec", "replicas"); err != nil || !found || n != 3 {
		t.Errorf("spec.replicas = %v, %v, %v; want int64 3", n, found, err)
	}
	// DeepCopy panics on values unstructured does not allow.
	_ = objs[0].DeepCopy()
}

func TestFind(t *testing.T) {
	tests := []struct {
		name string
		fsys fstest.MapFS
		want string
	}{
		{"none", fstest.MapFS{"manifests/a.yaml": file(cm("a"))}, ""},
		{"yaml", fstest.MapFS{"kustomization.yaml": file("")}, "kustomization.yaml"},
		{"yml", fstest.MapFS{"kustomization.yml": file("")}, "kustomization.yml"},
		{"Kustomization", fstest.MapFS{"Kustomization": file("")}, "Kustomization"},
		{"kustomize's order", fstest.MapFS{"Kustomization": file(""), "kustomization.yml": file("")}, "kustomization.yml"},
		{"only in a subdirectory", fstest.MapFS{"base/kustomization.yaml": file("")}, ""},
		{"a directory of that name", fstest.MapFS{"kustomization.yaml/a": file("")}, ""},
		{"a symlink counts", fstest.MapFS{"kustomization.yaml": &fstest.MapFile{Mode: fs.ModeSymlink}}, "kustomization.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Find(tt.fsys)
			if err != nil || got != tt.want {
				t.Errorf("Find() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestBuildNeedsLimits(t *testing.T) {
	_, err := Build(context.Background(), fstest.MapFS{"kustomization.yaml": file("resources: [a.yaml]\n")}, Limits{})
	if err == nil || failure.As(err) != nil {
		t.Fatalf("error = %v, want a non-terminal error", err)
	}
}

func TestBuildCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Build(ctx, fstest.MapFS{"kustomization.yaml": file("resources: [a.yaml]\n"), "a.yaml": file(cm("a"))}, testLimits)
	if !errors.Is(err, context.Canceled) || failure.As(err) != nil {
		t.Fatalf("error = %v, want a non-terminal context.Canceled", err)
	}
}

func TestBundlePaths(t *testing.T) {
	tests := []struct{ in, want string }{
		{"'/bundle/base/cm.yaml' is not in or below '/bundle/overlay'", "'base/cm.yaml' is not in or below 'overlay'"},
		{"root '/bundle' and '/bundle/'", "root '.' and ''"},
		{"/bundles/x and x/bundle", "/bundles/x and x/bundle"},
	}
	for _, tt := range tests {
		if got := bundlePaths(tt.in); got != tt.want {
			t.Errorf("bundlePaths(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
