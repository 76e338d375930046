package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/rukpak/rukpak/internal/sourcetree"
	"github.com/rukpak/rukpak/internal/upload"
)

// render runs `rukpakctl render args...` in-process.
func render(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append([]string{"render"}, args...))
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func repoPath(parts ...string) string {
	return filepath.Join(append([]string{sourcetree.Root()}, parts...)...)
}

func TestRender(t *testing.T) {
	chart := repoPath("internal", "format", "helm", "testdata", "charts", "e2e-app")
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte("replicas: 7\nworker: {enabled: false}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		want    []string // substrings of the output
		notWant []string
		wantErr string
	}{
		{name: "helm chart guessed, values applied", args: []string{chart, "--name", "shop", "-f", values},
			want: []string{"kind: Deployment", "name: shop\n", "replicas: 7", "name: shop-config"}, notWant: []string{"shop-worker"}},
		{name: "registry bundle guessed, AllNamespaces", args: []string{repoPath("internal", "format", "registryv1", "testdata", "bundles", "e2e-operator")},
			want: []string{"kind: CustomResourceDefinition", "kind: ClusterRoleBinding", "name: op-manager", "olm.targetNamespaces: \"\""}, notWant: []string{"kind: ClusterServiceVersion"}},
		{name: "registry bundle, OwnNamespace", args: []string{repoPath("internal", "format", "registryv1", "testdata", "bundles", "e2e-operator"), "--namespace", "ops", "--watch-namespaces", "ops"},
			want: []string{"kind: RoleBinding", "olm.targetNamespaces: ops"}},
		{name: "plain bundle guessed", args: []string{repoPath("internal", "format", "plain", "testdata", "bundles", "multi-doc-yaml")},
			want: []string{"apiVersion:"}},
		{name: "a chart calling lookup: noted, lookup finds nothing",
			args: []string{repoPath("internal", "format", "helm", "testdata", "charts", "capabilities")},
			want: []string{`note: rendered offline, lookup finds nothing, as in helm template: the chart calls lookup "v1" "Secret" "default" "anything"`,
				`lookup: "0"`, `revision: "1"`}},
		{name: "a chart without lookup: no note", args: []string{chart}, notWant: []string{"note:"}},
		{name: "explicit class name", args: []string{chart, "--class", "core-rukpak-io-helm"}, want: []string{"name: release-worker"}},
		{name: "values for a plain bundle refused", args: []string{repoPath("internal", "format", "plain", "testdata", "bundles", "multi-doc-yaml"), "-f", values},
			wantErr: "--values is for Helm charts"},
		{name: "unknown class", args: []string{chart, "--class", "nope"}, wantErr: `class "nope" is not built in`},
		{name: "chart as plain fails with the format's reason", args: []string{chart, "--class", "plain"}, wantErr: "no manifests/ directory"},
		{name: "missing file is read as an image ref and fails", args: []string{filepath.Join(t.TempDir(), "nothing", "here")}, wantErr: "read as an image"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := render(t, tt.args...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("render: %v\n%s", err, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(out, w) {
					t.Errorf("output has %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestRenderArchiveAndImage renders the same bundle from a .tar.gz file and
// from an image in a registry on loopback: the same objects.
func TestRenderArchiveAndImage(t *testing.T) {
	dir := repoPath("internal", "format", "registryv1", "testdata", "bundles", "e2e-operator")
	want, err := render(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	packed, err := upload.Pack(dir)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	_, err = buf.ReadFrom(packed)
	_ = packed.Close()
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "bundle.tar.gz")
	if err := os.WriteFile(archive, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := render(t, archive); err != nil || got != want {
		t.Fatalf("from archive: err %v, output differs:\n%s", err, got)
	}

	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	ref := strings.TrimPrefix(srv.URL, "http://") + "/bundles/op:v1"
	layer, err := tarball.LayerFromReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	if err := crane.Push(img, ref, crane.Insecure); err != nil {
		t.Fatal(err)
	}
	if got, err := render(t, ref); err != nil || got != want {
		t.Fatalf("from image %s: err %v, output differs:\n%s", ref, err, got)
	}
}
