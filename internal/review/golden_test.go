package review

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/rukpak/rukpak/internal/format/registryv1"
	"github.com/rukpak/rukpak/pkg/format"
)

// Regenerate the golden files with: go test ./internal/review -run TestGolden -update
var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// TestGolden reviews whole revisions and compares the review, as YAML,
// with testdata/<case>.golden.
func TestGolden(t *testing.T) {
	tests := []struct {
		name string
		// active, next and live return the objects of each side.
		active, next, live func(t *testing.T) []*unstructured.Unstructured
	}{
		{
			// An operator upgrade that grows power every way: testdata/
			// operator-upgrade/{active,new,live}.
			name:   "operator-upgrade",
			active: dir("operator-upgrade/active"),
			next:   dir("operator-upgrade/new"),
			live:   dir("operator-upgrade/live"),
		},
		{
			// The same objects with no active revision known, and the
			// active revision's objects live: compared with the live ones.
			name:   "operator-upgrade-unknown-active",
			active: none,
			next:   dir("operator-upgrade/new"),
			live:   both(dir("operator-upgrade/active"), dir("operator-upgrade/live")),
		},
		{
			// A registry+v1 upgrade as package registryv1 renders it: the
			// roles are renamed with the CSV's version but grant the same,
			// and a Deployment goes: no power grows.
			name:   "registryv1-upgrade",
			active: registryV1("e2e-operator"),
			next:   registryV1("e2e-operator-v2"),
			live:   none,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := compute(t, tt.active(t), tt.next(t), tt.live(t))
			got, err := yaml.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", tt.name+".golden")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("review differs from %s (run with -update to rewrite it):\n%s", path, got)
			}
		})
	}
}

// dir returns the objects of testdata/d.
func dir(d string) func(t *testing.T) []*unstructured.Unstructured {
	return func(t *testing.T) []*unstructured.Unstructured { return readDir(t, filepath.Join("testdata", d)) }
}

// none returns no objects.
func none(*testing.T) []*unstructured.Unstructured { return nil }

// both returns the objects of a and b.
func both(a, b func(t *testing.T) []*unstructured.Unstructured) func(t *testing.T) []*unstructured.Unstructured {
	return func(t *testing.T) []*unstructured.Unstructured { return append(a(t), b(t)...) }
}

// registryV1 renders a test bundle of package registryv1 in namespace op.
func registryV1(bundle string) func(t *testing.T) []*unstructured.Unstructured {
	return func(t *testing.T) []*unstructured.Unstructured {
		fsys := os.DirFS(filepath.Join("..", "format", "registryv1", "testdata", "bundles", bundle))
		objs, err := registryv1.New().Objects(context.Background(), fsys, format.Config{InstallNamespace: "op", ReleaseName: "op"})
		if err != nil {
			t.Fatal(err)
		}
		return objs
	}
}
