package managerproc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rukpak/rukpak/internal/sourcetree"
)

// BuildAt returns the manager (cmd/rukpak) as it was at commit, an earlier
// release for an upgrade test. It is built from a temporary git worktree of
// this repository into bin/managers/<commit>/rukpak, which later runs
// reuse. A commit this clone lacks (a shallow clone) is fetched from
// origin first.
func BuildAt(t *testing.T, commit string) string {
	t.Helper()
	root := sourcetree.Root()
	bin := filepath.Join(root, "bin", "managers", commit, "rukpak")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	git := func(args ...string) error {
		cmd := exec.Command("git", append([]string{"-C", root}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if git("cat-file", "-e", commit+"^{commit}") != nil {
		if err := git("fetch", "--quiet", "origin", commit); err != nil {
			t.Fatalf("commit %s is not in this clone and could not be fetched: %v", commit, err)
		}
	}
	src := filepath.Join(t.TempDir(), "src")
	if err := git("worktree", "add", "--detach", "--quiet", src, commit); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := git("worktree", "remove", "--force", src); err != nil {
			t.Logf("removing the worktree of %s: %v", commit, err)
		}
	}()
	// Built beside its final place and renamed, so a run stopped half-way
	// leaves no half-written binary to reuse.
	tmp := bin + ".partial"
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", tmp, "./cmd/rukpak")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the manager of %s: %v\n%s", commit, err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}
