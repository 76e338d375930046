package kustomize

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// fileSystem is the read-only file system kustomize builds from: the
// bundle mounted at mountDir, and nothing else. Unlike kustomize's own
// in-memory file system it takes any name the bundle's file system
// allows ("high-availability-1.21+"), and it reads a file only when the
// build does (see bundle).
type fileSystem struct {
	b *bundle
}

var _ filesys.FileSystem = fileSystem{}

// errReadOnly is what every write returns: a build only reads.
var errReadOnly = errors.New("the bundle is read-only")

// notExist is kustomize's own message for a path that is not there, so
// that its errors read as they do with its file systems.
type notExist string

func (e notExist) Error() string { return fmt.Sprintf("'%s' doesn't exist", string(e)) }

func (e notExist) Unwrap() error { return fs.ErrNotExist }

// bundlePath returns the bundle path of the absolute or root-relative
// path p, and whether p is in the bundle at all. "/" is not.
func bundlePath(p string) (string, bool) {
	p = filepath.ToSlash(p)
	p = path.Clean("/" + p)
	if p == mountDir {
		return ".", true
	}
	rest, ok := strings.CutPrefix(p, mountDir+"/")
	return rest, ok
}

// stat returns the node at p; "/" is a directory holding only mountDir.
func (f fileSystem) stat(p string) node {
	if path.Clean("/"+filepath.ToSlash(p)) == "/" {
		return node{kind: directory}
	}
	bp, ok := bundlePath(p)
	if !ok {
		return node{}
	}
	return f.b.stat(bp)
}

// Create refuses: the bundle is read-only.
func (fileSystem) Create(p string) (filesys.File, error) {
	return nil, fmt.Errorf("creating %s: %w", p, errReadOnly)
}

// Mkdir refuses: the bundle is read-only.
func (fileSystem) Mkdir(p string) error { return fmt.Errorf("creating %s: %w", p, errReadOnly) }

// MkdirAll refuses: the bundle is read-only.
func (fileSystem) MkdirAll(p string) error { return fmt.Errorf("creating %s: %w", p, errReadOnly) }

// RemoveAll refuses: the bundle is read-only.
func (fileSystem) RemoveAll(p string) error { return fmt.Errorf("removing %s: %w", p, errReadOnly) }

// WriteFile refuses: the bundle is read-only.
func (fileSystem) WriteFile(p string, _ []byte) error {
	return fmt.Errorf("writing %s: %w", p, errReadOnly)
}

// Open returns the file at p for reading; a directory cannot be opened.
func (f fileSystem) Open(p string) (filesys.File, error) {
	data, err := f.ReadFile(p)
	if err != nil {
		return nil, err
	}
	return &openFile{Reader: bytes.NewReader(data), info: fileInfo{name: path.Base(p), size: int64(len(data))}}, nil
}

// IsDir reports whether p is a directory.
func (f fileSystem) IsDir(p string) bool { return f.stat(p).kind == directory }

// Exists reports whether anything is at p (a symlink too: reading it is
// refused, so that it is not silently taken as missing).
func (f fileSystem) Exists(p string) bool { return f.stat(p).kind != absent }

// ReadDir returns the names in directory p, sorted.
func (f fileSystem) ReadDir(p string) ([]string, error) {
	if path.Clean("/"+filepath.ToSlash(p)) == "/" {
		return []string{path.Base(mountDir)}, nil
	}
	bp, ok := bundlePath(p)
	if !ok || f.b.stat(bp).kind != directory {
		return nil, notExist(p)
	}
	return append([]string(nil), f.b.list(bp)...), nil
}

// CleanedAbs returns the directory p is, or the directory and name of
// the file p is.
func (f fileSystem) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	abs := path.Clean("/" + filepath.ToSlash(p))
	switch f.stat(abs).kind {
	case absent:
		return "", "", notExist(abs)
	case directory:
		return filesys.ConfirmedDir(abs), "", nil
	}
	return filesys.ConfirmedDir(path.Dir(abs)), path.Base(abs), nil
}

// Glob returns the files and directories matching pattern, whose
// wildcards may only be in its last element.
func (f fileSystem) Glob(pattern string) ([]string, error) {
	abs := path.Clean("/" + filepath.ToSlash(pattern))
	dir, name := path.Split(abs)
	if strings.ContainsAny(dir, `*?[\`) {
		return nil, fmt.Errorf("glob %s: wildcards are only supported in the last element", pattern)
	}
	names, err := f.ReadDir(dir)
	if err != nil {
		// No directory, no match, as with filepath.Glob.
		return nil, nil //nolint:nilerr // see above
	}
	var out []string
	for _, n := range names {
		ok, err := path.Match(name, n)
		if err != nil {
			return nil, fmt.Errorf("glob %s: %w", pattern, err)
		}
		if ok {
			out = append(out, path.Join(dir, n))
		}
	}
	return out, nil
}

// ReadFile returns the content of the file at p.
func (f fileSystem) ReadFile(p string) ([]byte, error) {
	bp, ok := bundlePath(p)
	if !ok {
		return nil, notExist(p)
	}
	switch f.b.stat(bp).kind {
	case absent:
		return nil, notExist(p)
	case directory:
		return nil, fmt.Errorf("reading %s: is a directory", p)
	}
	return f.b.read(bp)
}

// Walk calls walkFn for p and, if it is a directory, everything below it
// in lexical order, as filepath.Walk does.
func (f fileSystem) Walk(p string, walkFn filepath.WalkFunc) error {
	err := f.walk(p, walkFn)
	if errors.Is(err, filepath.SkipDir) || errors.Is(err, filepath.SkipAll) {
		return nil
	}
	return err
}

// walk walks p. SkipDir from a directory skips it; from a file, the rest
// of its directory (the caller returns nil on it).
func (f fileSystem) walk(p string, walkFn filepath.WalkFunc) error {
	n := f.stat(p)
	if n.kind == absent {
		return walkFn(p, nil, notExist(p))
	}
	err := walkFn(p, infoOf(path.Base(p), n), nil)
	if n.kind != directory || err != nil {
		if n.kind == directory && errors.Is(err, filepath.SkipDir) {
			return nil
		}
		return err
	}
	names, err := f.ReadDir(p)
	if err != nil {
		return walkFn(p, infoOf(path.Base(p), n), err)
	}
	for _, name := range names {
		if err := f.walk(filepath.Join(p, name), walkFn); err != nil {
			if errors.Is(err, filepath.SkipDir) {
				return nil
			}
			return err
		}
	}
	return nil
}

// openFile is an open file of the bundle.
type openFile struct {
	*bytes.Reader
	info fileInfo
}

var _ filesys.File = (*openFile)(nil)

// Write refuses: the bundle is read-only.
func (*openFile) Write([]byte) (int, error) { return 0, errReadOnly }

// Close does nothing: the content is in memory.
func (*openFile) Close() error { return nil }

// Stat returns the file's name and size.
func (f *openFile) Stat() (os.FileInfo, error) { return f.info, nil }

// fileInfo describes a path of the bundle.
type fileInfo struct {
	name string
	size int64
	mode fs.FileMode
}

var _ os.FileInfo = fileInfo{}

// infoOf returns the fileInfo of node n called name.
func infoOf(name string, n node) fileInfo {
	switch n.kind {
	case directory:
		return fileInfo{name: name, mode: fs.ModeDir | 0o555}
	case special:
		return fileInfo{name: name, mode: fs.ModeIrregular}
	}
	return fileInfo{name: name, size: n.size, mode: 0o444}
}

// Name returns the base name.
func (i fileInfo) Name() string { return i.name }

// Size returns the size of a file in bytes.
func (i fileInfo) Size() int64 { return i.size }

// Mode returns the type and permission bits.
func (i fileInfo) Mode() fs.FileMode { return i.mode }

// ModTime returns the zero time: the bundle's times are not read.
func (fileInfo) ModTime() time.Time { return time.Time{} }

// IsDir reports whether the path is a directory.
func (i fileInfo) IsDir() bool { return i.mode.IsDir() }

// Sys returns nil.
func (fileInfo) Sys() any { return nil }
