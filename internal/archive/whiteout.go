package archive

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

const (
	whiteoutPrefix = ".wh."         // ".wh.NAME" deletes NAME
	metaPrefix     = ".wh..wh."     // AUFS metadata, ".wh..wh..opq" among it
	opaqueMarker   = ".wh..wh..opq" // empties its directory
)

// isWhiteout reports whether the entry name is a whiteout or other AUFS
// metadata, which a layer applies rather than writes.
func isWhiteout(name string) bool {
	return strings.HasPrefix(path.Base(name), whiteoutPrefix) || strings.Contains("/"+name, "/"+metaPrefix)
}

// whiteout applies the whiteout entry name. As the OCI image spec says, it
// only removes what earlier layers wrote, not what this layer wrote.
func (x *extractor) whiteout(raw, name string) error {
	base := path.Base(name)
	if base == opaqueMarker {
		if err := x.parents(raw, name); err != nil {
			return err
		}
		dir := path.Dir(name)
		if err := x.opaque(raw, dir); err != nil {
			return err
		}
		x.markWritten(dir)
		return nil
	}
	if strings.Contains("/"+name, "/"+metaPrefix) {
		return nil // other AUFS metadata (hard link directories and such)
	}
	victim := strings.TrimPrefix(base, whiteoutPrefix)
	if victim == "" || victim == "." || victim == ".." {
		return refuse(raw, "whiteout names no file")
	}
	target := path.Join(path.Dir(name), victim)
	p, state, err := x.inspectParents(target)
	switch {
	case err != nil:
		return fmt.Errorf("archive entry %q: %w", raw, err)
	case state == parentSymlink:
		return refuse(raw, "parent %q is a symbolic link; links are never followed", p)
	case state != parentsOK || x.written[target]:
		return nil // nothing of an earlier layer is there
	}
	if _, err := x.root.Lstat(target); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return x.remove(raw, target)
}

// opaque removes from dir (a real directory) everything earlier layers
// wrote, keeping what this layer wrote.
func (x *extractor) opaque(raw, dir string) error {
	f, err := x.root.Open(dir)
	if err != nil {
		return fmt.Errorf("archive entry %q: %w", raw, err)
	}
	entries, err := f.ReadDir(-1)
	_ = f.Close()
	if err != nil {
		return fmt.Errorf("archive entry %q: reading %s: %w", raw, dir, err)
	}
	for _, e := range entries {
		p := path.Join(dir, e.Name())
		switch {
		case !x.written[p]:
			err = x.remove(raw, p)
		case e.IsDir():
			err = x.opaque(raw, p)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
