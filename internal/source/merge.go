package source

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// CleanPath cleans p, a slash-separated path inside the unpacked tree (a
// destination or a sub-path), and returns "." for the root. An absolute path
// or one that escapes the tree with ".." is refused with a terminal
// UnpackFailed failure: paths come from users and content, never trusted.
func CleanPath(p string) (string, error) {
	if strings.HasPrefix(p, "/") || filepath.IsAbs(p) {
		return "", failure.New(v1alpha2.ReasonUnpackFailed, "path %q is absolute; it must be relative to the root of the bundle", p)
	}
	if strings.ContainsRune(p, 0) {
		return "", failure.New(v1alpha2.ReasonUnpackFailed, "path %q contains a NUL byte", p)
	}
	c := path.Clean("/" + p)[1:] // rooted cleaning cannot climb above the root ...
	if c == "" {
		c = "."
	}
	if rel := path.Clean(p); rel != c { // ... so a difference means p escaped
		return "", failure.New(v1alpha2.ReasonUnpackFailed, "path %q escapes the root of the bundle", p)
	}
	return c, nil
}

// claim records which source wrote a path of the tree, and whether as a
// directory (which several sources may share) or as a file (which only one
// may write).
type claim struct {
	index int
	typ   v1alpha2.SourceType
	dir   bool
}

// merger moves the trees of several sources into one directory.
type merger struct {
	dir   string
	paths map[string]claim // slash path relative to dir → its writer
}

// take claims rel for c, failing when another source holds it and the two
// are not both directories.
func (m *merger) take(rel string, c claim) error {
	prev, ok := m.paths[rel]
	if !ok {
		m.paths[rel] = c
		return nil
	}
	if prev.dir && c.dir {
		return nil
	}
	return failure.New(v1alpha2.ReasonSourceConflict, "sources %d (%s) and %d (%s) both write %s",
		prev.index, prev.typ, c.index, c.typ, rel)
}

// merge moves the tree in src into m.dir at dest (a cleaned path), claiming
// every path on the way.
func (m *merger) merge(src, dest string, c claim) error {
	dc := c
	dc.dir = true
	if dest != "." {
		parts := strings.Split(dest, "/")
		for n := range parts {
			if err := m.take(strings.Join(parts[:n+1], "/"), dc); err != nil {
				return err
			}
		}
	}
	if err := os.MkdirAll(filepath.Join(m.dir, filepath.FromSlash(dest)), 0o755); err != nil {
		return fmt.Errorf("source %d (%s): creating destination %s: %w", c.index, c.typ, dest, err)
	}
	// WalkDir reads a directory's entries before visiting them, so moving the
	// files out while walking is safe.
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("source %d (%s): reading unpacked content: %w", c.index, c.typ, err)
		}
		if p == src {
			return nil
		}
		r, err := filepath.Rel(src, p)
		if err != nil {
			return fmt.Errorf("source %d (%s): %w", c.index, c.typ, err)
		}
		rel := path.Join(dest, filepath.ToSlash(r))
		target := filepath.Join(m.dir, filepath.FromSlash(rel))
		switch {
		case d.IsDir():
			if err := m.take(rel, dc); err != nil {
				return err
			}
			if err := os.MkdirAll(target, 0o755); err != nil {
				return fmt.Errorf("source %d (%s): creating %s: %w", c.index, c.typ, rel, err)
			}
		case d.Type().IsRegular():
			if err := m.take(rel, c); err != nil {
				return err
			}
			if err := os.Rename(p, target); err != nil {
				return fmt.Errorf("source %d (%s): moving %s into place: %w", c.index, c.typ, rel, err)
			}
		default:
			return failure.New(v1alpha2.ReasonUnpackFailed, "source %d (%s) wrote %s, which is not a regular file or directory (%s)",
				c.index, c.typ, rel, d.Type())
		}
		return nil
	})
}
