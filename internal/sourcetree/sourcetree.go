// Package sourcetree finds rukpak's source tree for the tests and tools
// built from it, which read its files (examples, config, hack) at run
// time. Code that must also run from the module cache reads embedded
// copies instead (package github.com/rukpak/rukpak/config).
package sourcetree

import (
	"path/filepath"
	"runtime"
)

// Root returns the repository root: the directory holding go.mod, two
// levels above this file.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}
