package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set by the release build with -ldflags -X; see hack/release and
// docs/release.md.
var (
	release = ""
	commit  = ""
)

// Devel is the release of a binary the release build did not stamp.
const Devel = "devel"

// Info describes a binary.
type Info struct {
	// Release is the release's version (v0.x.y), or Devel.
	Release string `json:"release"`
	// Commit is the git commit the binary was built from; empty when
	// unknown.
	Commit string `json:"commit,omitempty"`
	// Modified is true when the work tree had uncommitted changes (known
	// only for devel builds, from the VCS information).
	Modified bool `json:"modified,omitempty"`
	// GoVersion is the Go release that built the binary.
	GoVersion string `json:"goVersion"`
	// Platform is GOOS/GOARCH of the binary.
	Platform string `json:"platform"`
}

// Get returns the information of the running binary.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return get(release, commit, bi)
}

// get fills Info from the stamped values, falling back to the build
// information for what the release build did not stamp.
func get(rel, com string, bi *debug.BuildInfo) Info {
	info := Info{Release: rel, Commit: com, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if info.Release == "" {
		info.Release = Devel
	}
	if bi == nil {
		return info
	}
	if bi.GoVersion != "" {
		info.GoVersion = bi.GoVersion
	}
	if com != "" {
		return info
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Commit = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info
}

// String is the one line `rukpak version` and `rukpakctl version` print,
// such as "v0.3.0 commit 1a2b3c4… go1.26.8 linux/amd64".
func (i Info) String() string {
	c := i.Commit
	if c == "" {
		c = "unknown"
	}
	if i.Modified {
		c += "-dirty"
	}
	return fmt.Sprintf("%s commit %s %s %s", i.Release, c, i.GoVersion, i.Platform)
}

// Package is the import path of this package, for -X linker flags.
const Package = "github.com/rukpak/rukpak/internal/version"

// LDFlags returns the -X linker flags (for go build -ldflags) that stamp
// release and commit into a binary importing this package. Neither may
// contain spaces.
func LDFlags(release, commit string) string {
	return fmt.Sprintf("-X %s.release=%s -X %s.commit=%s", Package, release, Package, commit)
}
