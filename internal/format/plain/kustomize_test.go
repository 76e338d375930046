package plain

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
	"github.com/rukpak/rukpak/pkg/format"
)

func TestObjectsKustomizeErrors(t *testing.T) {
	tests := []struct {
		name   string
		fsys   fstest.MapFS
		limits Limits
		reason string
		want   []string
	}{
		{
			name: "duplicate once placed in the install namespace",
			fsys: fstest.MapFS{
				"kustomization.yaml": file("resources: [a.yaml, b.yaml]\n"),
				"a.yaml":             file(cm("dup")),
				"b.yaml":             file(cm("dup") + "  namespace: install-ns\n"),
			},
			reason: v1alpha2.ReasonInvalidContent,
			want:   []string{"object ConfigMap/dup", "defined twice: in kustomization.yaml: built object 1 and kustomization.yaml: built object 2"},
		},
		{
			name: "too many objects",
			fsys: fstest.MapFS{
				"kustomization.yaml": file("resources: [a.yaml]\nconfigMapGenerator: [{name: g, literals: [a=b]}]\n"),
				"a.yaml":             file(cm("a")),
			},
			limits: Limits{MaxObjects: 1},
			reason: v1alpha2.ReasonInvalidContent,
			want:   []string{"kustomization.yaml: bundle has more than 1 objects"},
		},
		{
			name:   "no objects",
			fsys:   fstest.MapFS{"kustomization.yml": file("namePrefix: a-\n"), "manifests/a.yaml": file(cm("a"))},
			reason: v1alpha2.ReasonInvalidContent,
			want:   []string{"kustomization.yml builds no objects"},
		},
		{
			name:   "object without a name",
			fsys:   fstest.MapFS{"Kustomization": file("resources: [a.yaml]\n"), "a.yaml": file("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: a-\n")},
			reason: v1alpha2.ReasonRenderFailed,
			want:   []string{"Kustomization: kustomize build failed"},
		},
		{
			name:   "plain's file size limit applies",
			fsys:   fstest.MapFS{"kustomization.yaml": file("resources: [a.yaml]\n"), "a.yaml": file(cm(strings.Repeat("a", 100)))},
			limits: Limits{MaxFileBytes: 100},
			reason: v1alpha2.ReasonInvalidContent,
			want:   []string{"a.yaml: file is over the limit of 100 bytes per file"},
		},
		{
			name:   "plain's file count limit applies",
			fsys:   fstest.MapFS{"kustomization.yaml": file("resources: [a.yaml, b.yaml]\n"), "a.yaml": file(cm("a")), "b.yaml": file(cm("b"))},
			limits: Limits{MaxFiles: 2},
			reason: v1alpha2.ReasonInvalidContent,
			want:   []string{"the build reads more than 2 files"},
		},
		{
			name:   "remote base",
			fsys:   fstest.MapFS{"kustomization.yaml": file("resources:\n- github.com/org/repo//deploy?ref=v1\n")},
			reason: v1alpha2.ReasonInvalidContent,
			want:   []string{`kustomization.yaml: resources entry "github.com/org/repo//deploy?ref=v1" is a remote reference`},
		},
		{
			name:   "build failure",
			fsys:   fstest.MapFS{"kustomization.yaml": file("resources: [missing.yaml]\n"), "manifests/a.yaml": file(cm("a"))},
			reason: v1alpha2.ReasonRenderFailed,
			want:   []string{"kustomization.yaml: kustomize build failed", "missing.yaml"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &Format{Limits: tt.limits}
			objs, err := f.Objects(context.Background(), tt.fsys, format.Config{InstallNamespace: "install-ns"})
			if err == nil {
				t.Fatalf("Objects() = %v, want an error", names(objs))
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

func TestObjectsKustomizationOnlyAtTheRoot(t *testing.T) {
	fsys := fstest.MapFS{
		"manifests/a.yaml":        file(cm("a")),
		"base/kustomization.yaml": file("resources: [missing.yaml]\n"),
	}
	objs, err := New().Objects(context.Background(), fsys, format.Config{InstallNamespace: "install-ns"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names(objs), ","); got != "a" {
		t.Errorf("names = %s, want a from manifests/", got)
	}
}
