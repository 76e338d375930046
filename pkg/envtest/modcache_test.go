//go:build integration

package envtest_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rukpak/rukpak/internal/sourcetree"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// TestFromModuleCache builds testdata/modcache/check_test.go in a module of
// its own that requires rukpak from a read-only copy of its module outside
// the repository — what the module cache holds: no .git, no bin/, no
// nested modules — and runs it with the copy moved away. envtest must
// start with rukpak's CRDs, given only $KUBEBUILDER_ASSETS. It compiles a
// module, so it is not short.
func TestFromModuleCache(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests a module of its own")
	}
	bin, err := envtest.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	root := sourcetree.Root()
	dir := t.TempDir()
	mod := filepath.Join(dir, "github.com", "rukpak", "rukpak@v0.0.0")
	if err := copyModule(root, mod); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = writable(mod) }) // mod as renamed below

	check := filepath.Join(dir, "check")
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	test, err := os.ReadFile(filepath.Join("testdata", "modcache", "check_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	goMod := fmt.Sprintf("module example.com/check\n\ngo 1.26.0\n\nrequire github.com/rukpak/rukpak v0.0.0\n\nreplace github.com/rukpak/rukpak => %s\n", mod)
	if err := os.MkdirAll(check, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"go.mod": []byte(goMod), "go.sum": sum, "check_test.go": test} {
		if err := os.WriteFile(filepath.Join(check, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Every module the check needs is in the module cache already, since
	// rukpak builds: nothing is downloaded, and the requirements the check
	// module lacks are added (-mod=mod; not go mod tidy, which would want
	// the modules of the tests of every dependency too).
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "test", "-c", "-o", "check.test", ".")
	build.Dir = check
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the check against rukpak from %s: %v\n%s", mod, err, out)
	}
	// Run without the sources it was built from: whatever envtest reads
	// must be embedded.
	if err := os.Rename(mod, mod+".gone"); err != nil {
		t.Fatal(err)
	}
	mod += ".gone"
	run := exec.CommandContext(ctx, filepath.Join(check, "check.test"), "-test.count=1", "-test.timeout=3m")
	run.Dir = check
	run.Env = append(os.Environ(), "KUBEBUILDER_ASSETS="+bin)
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("the check: %v\n%s", err, out)
	}
}

// skipped are what the module cache does not hold of rukpak's repository.
var skipped = []string{".git", "bin", "test-results", "dist"}

// copyModule copies the module at root to dir as the module cache holds
// it: regular files only, without nested modules and what is not
// committed, read-only.
func copyModule(root, dir string) error {
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if d.IsDir() && rel != "." {
			if slices.Contains(skipped, rel) {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		target := filepath.Join(dir, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return os.WriteFile(target, data, 0o444)
		}
		return nil // symlinks and the like are not in module zips
	})
	if err != nil {
		return fmt.Errorf("copying the module: %w", err)
	}
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return os.Chmod(path, 0o555)
	})
}

// writable makes dir's directories writable again, for t.TempDir's
// cleanup.
func writable(dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return os.Chmod(path, 0o755)
	})
}
