package archive

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// parentState is how the parents of a path stand.
type parentState int

const (
	parentsOK     parentState = iota // all real directories
	parentMissing                    // one does not exist
	parentSymlink                    // one is a symbolic link
	parentNotDir                     // one is a file
)

// inspectParents returns the first parent of name that is not a real
// directory, and why, without changing anything.
func (x *extractor) inspectParents(name string) (string, parentState, error) {
	dir := path.Dir(name)
	if dir == "." || x.dirs[dir] {
		return "", parentsOK, nil
	}
	parts := strings.Split(dir, "/")
	for i := range parts {
		p := strings.Join(parts[:i+1], "/")
		if x.dirs[p] {
			continue
		}
		fi, err := x.root.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return p, parentMissing, nil
		case err != nil:
			return p, parentsOK, err
		case fi.Mode()&fs.ModeSymlink != 0:
			return p, parentSymlink, nil
		case !fi.IsDir():
			return p, parentNotDir, nil
		}
		x.dirs[p] = true
	}
	return "", parentsOK, nil
}

// parents makes the parents of name real directories: missing ones are
// made; a link is refused; a file is refused, or replaced in a layer.
func (x *extractor) parents(raw, name string) error {
	for {
		p, state, err := x.inspectParents(name)
		if err != nil {
			return fmt.Errorf("archive entry %q: %w", raw, err)
		}
		switch state {
		case parentsOK:
			return nil
		case parentSymlink:
			return refuse(raw, "parent %q is a symbolic link; links are never followed", p)
		case parentNotDir:
			if !x.layer {
				return refuse(raw, "parent %q is not a directory", p)
			}
			if err := x.remove(raw, p); err != nil {
				return err
			}
		}
		// An implied directory is an entry too, and its path counts.
		x.entries++
		if x.entries > x.limits.MaxFiles {
			return refuse(raw, "the archive has more than %d entries (with the directories they imply), the limit", x.limits.MaxFiles)
		}
		if err := x.countPath(raw, p); err != nil {
			return err
		}
		if err := x.mkdir(raw, p); err != nil {
			return err
		}
	}
}
