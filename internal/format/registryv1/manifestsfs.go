package registryv1

import (
	"errors"
	"io"
	"io/fs"
	"strings"
	"time"
)

// manifestsView shows the directory dir of fsys as manifests/, the only
// entry of its root: what plain.Format reads.
type manifestsView struct {
	fsys fs.FS
	dir  string
}

var (
	_ fs.ReadDirFS = manifestsView{}
	_ fs.StatFS    = manifestsView{}
)

// path returns the path in fsys of name, a path of the view other than ".".
func (v manifestsView) path(op, name string) (string, error) {
	rest, ok := strings.CutPrefix(name, defaultManifestsDir)
	if !fs.ValidPath(name) || !ok || (rest != "" && rest[0] != '/') {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return v.dir + rest, nil
}

// Open opens name.
func (v manifestsView) Open(name string) (fs.File, error) {
	if name == "." {
		entries, err := v.ReadDir(".")
		if err != nil {
			return nil, err
		}
		return &rootDir{entries: entries}, nil
	}
	p, err := v.path("open", name)
	if err != nil {
		return nil, err
	}
	f, err := v.fsys.Open(p)
	if err != nil || name != defaultManifestsDir {
		return f, err
	}
	return renamedFile{File: f}, nil
}

// ReadDir lists the directory name; the root lists manifests only, if dir
// exists.
func (v manifestsView) ReadDir(name string) ([]fs.DirEntry, error) {
	if name != "." {
		p, err := v.path("readdir", name)
		if err != nil {
			return nil, err
		}
		return fs.ReadDir(v.fsys, p)
	}
	info, err := fs.Stat(v.fsys, v.dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return []fs.DirEntry{fs.FileInfoToDirEntry(renamedInfo{FileInfo: info})}, nil
}

// Stat describes name.
func (v manifestsView) Stat(name string) (fs.FileInfo, error) {
	if name == "." {
		return rootInfo{}, nil
	}
	p, err := v.path("stat", name)
	if err != nil {
		return nil, err
	}
	info, err := fs.Stat(v.fsys, p)
	if err != nil || name != defaultManifestsDir {
		return info, err
	}
	return renamedInfo{FileInfo: info}, nil
}

// renamedInfo describes dir under the name manifests.
type renamedInfo struct{ fs.FileInfo }

// Name returns "manifests".
func (renamedInfo) Name() string { return defaultManifestsDir }

// renamedFile is dir, open, under the name manifests.
type renamedFile struct{ fs.File }

// Stat describes the file under the name manifests.
func (f renamedFile) Stat() (fs.FileInfo, error) {
	info, err := f.File.Stat()
	if err != nil {
		return nil, err
	}
	return renamedInfo{FileInfo: info}, nil
}

// ReadDir reads the directory, as fs.ReadDirFile does.
func (f renamedFile) ReadDir(n int) ([]fs.DirEntry, error) {
	dir, ok := f.File.(fs.ReadDirFile)
	if !ok {
		return nil, &fs.PathError{Op: "readdir", Path: defaultManifestsDir, Err: errors.New("not a directory")}
	}
	return dir.ReadDir(n)
}

// rootInfo describes the view's root directory.
type rootInfo struct{}

// Name returns ".".
func (rootInfo) Name() string { return "." }

// Size returns 0.
func (rootInfo) Size() int64 { return 0 }

// Mode returns a read-only directory mode.
func (rootInfo) Mode() fs.FileMode { return fs.ModeDir | 0o555 }

// ModTime returns the zero time.
func (rootInfo) ModTime() time.Time { return time.Time{} }

// IsDir returns true.
func (rootInfo) IsDir() bool { return true }

// Sys returns nil.
func (rootInfo) Sys() any { return nil }

// rootDir is the view's root directory, open.
type rootDir struct {
	entries []fs.DirEntry
	read    int
}

// Stat describes the root.
func (d *rootDir) Stat() (fs.FileInfo, error) { return rootInfo{}, nil }

// Close does nothing.
func (d *rootDir) Close() error { return nil }

// Read fails: a directory has no content.
func (d *rootDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: ".", Err: errors.New("is a directory")}
}

// ReadDir returns the next n entries, as fs.ReadDirFile does.
func (d *rootDir) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.entries[d.read:]
	if n <= 0 {
		d.read = len(d.entries)
		return rest, nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	rest = rest[:min(n, len(rest))]
	d.read += len(rest)
	return rest, nil
}
