package v1alpha2_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/rukpak/rukpak/internal/sourcetree"
)

// TestGeneratedFilesAreCurrent regenerates the deepcopy code, the CRDs and the
// RBAC into temporary directories and fails when the committed copies differ:
// run `make generate manifests` and commit the result.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs controller-gen")
	}
	root := sourcetree.Root()
	tmp := t.TempDir()
	gens := []struct {
		name      string
		args      []string
		out       string
		committed string
	}{
		{"deepcopy", []string{"object", "paths=./api/v1alpha2", "output:object:dir=" + filepath.Join(tmp, "object")}, "object", "api/v1alpha2"},
		{"deepcopy-v1alpha1", []string{"object", "paths=./api/v1alpha1", "output:object:dir=" + filepath.Join(tmp, "object-v1alpha1")}, "object-v1alpha1", "api/v1alpha1"},
		{"crds", []string{"crd", "paths=./api/...", "output:crd:artifacts:config=" + filepath.Join(tmp, "crd")}, "crd", "config/crd/bases"},
		{"rbac", []string{"rbac:roleName=rukpak-manager", "paths=./internal/...", "output:rbac:artifacts:config=" + filepath.Join(tmp, "rbac")}, "rbac", "config/rbac"},
	}
	for _, g := range gens {
		t.Run(g.name, func(t *testing.T) {
			cmd := exec.Command("go", append([]string{"tool", "controller-gen"}, g.args...)...)
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("controller-gen %s: %v\n%s", g.name, err, out)
			}
			entries, err := os.ReadDir(filepath.Join(tmp, g.out))
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) == 0 {
				t.Fatalf("controller-gen %s generated nothing", g.name)
			}
			for _, e := range entries {
				want, err := os.ReadFile(filepath.Join(tmp, g.out, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				got, err := os.ReadFile(filepath.Join(root, g.committed, e.Name()))
				if err != nil {
					t.Fatalf("%s/%s is not committed: run make generate manifests", g.committed, e.Name())
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s/%s is stale: run make generate manifests", g.committed, e.Name())
				}
			}
		})
	}
}
