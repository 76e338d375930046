package release

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/rukpak/rukpak/internal/version"
)

// Platform is a GOOS/GOARCH pair.
type Platform struct {
	// OS is GOOS.
	OS string
	// Arch is GOARCH.
	Arch string
}

// String returns "os/arch".
func (p Platform) String() string { return p.OS + "/" + p.Arch }

// ParsePlatforms parses a comma-separated list of os/arch pairs; an empty
// string is an empty list.
func ParsePlatforms(s string) ([]Platform, error) {
	var out []Platform
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		goos, arch, ok := strings.Cut(f, "/")
		if !ok || goos == "" || arch == "" || strings.Contains(arch, "/") {
			return nil, fmt.Errorf("platform %q: want os/arch, such as linux/amd64", f)
		}
		out = append(out, Platform{OS: goos, Arch: arch})
	}
	return out, nil
}

// BuildBinary compiles the main package pkg (such as "./cmd/rukpak") of the
// module in dir for p into out: statically (CGO_ENABLED=0), with -trimpath,
// without symbol tables, and with release and commit stamped into package
// version. Go's own output is returned in the error when it fails.
func BuildBinary(ctx context.Context, dir, pkg string, p Platform, release, commit, out string) error {
	ldflags := "-s -w " + version.LDFlags(release, commit)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch)
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s for %s: %w\n%s", pkg, p, err, output)
	}
	if _, err := os.Stat(out); err != nil {
		return fmt.Errorf("building %s for %s: %w", pkg, p, err)
	}
	return nil
}

// cliName is the file name of rukpakctl for p in the release directory.
func cliName(p Platform) string {
	return filepath.Base(fmt.Sprintf("rukpakctl-%s-%s", p.OS, p.Arch))
}
