package plain

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/rukpak/rukpak/internal/format/formattest"
	"github.com/rukpak/rukpak/pkg/format"
)

// Regenerate the golden files with: go test ./internal/format/plain -update
var update = flag.Bool("update", false, "rewrite testdata/golden from testdata/bundles")

// TestObjectsGolden reads each bundle of testdata/bundles/<case> and
// compares its objects with testdata/golden/<case>/NN_kind_name.yaml.
func TestObjectsGolden(t *testing.T) {
	cases, err := os.ReadDir(filepath.Join("testdata", "bundles"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.Name(), func(t *testing.T) {
			objs, err := objectsBothWays(t, New(), os.DirFS(filepath.Join("testdata", "bundles", c.Name())),
				format.Config{InstallNamespace: "install-ns", ReleaseName: "release"})
			if err != nil {
				t.Fatalf("Objects() error = %v", err)
			}
			formattest.CompareGolden(t, filepath.Join("testdata", "golden", c.Name()), objs, *update)
		})
	}
}
