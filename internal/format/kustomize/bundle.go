package kustomize

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"sync"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// kind is what a path of the bundle is.
type kind int

const (
	// absent: nothing is at the path, or a parent is not a directory.
	absent kind = iota
	// directory: a directory.
	directory
	// regular: a regular file.
	regular
	// special: a symlink, device, pipe or socket, or a path below a
	// symlink. It is never read.
	special
)

// node is a path of the bundle as its directory lists it.
type node struct {
	kind kind
	// size is the size of a regular file, as its directory reported it.
	size int64
	// at is the path that made the node special: the node's own path or a
	// symlink above it.
	at string
}

// bundle reads a bundle for one build: a path is looked up only when the
// build asks for it (listing the directories on its way), a file is read
// only when the build reads it, once, within Limits. Nothing else of the
// bundle is read, so files and directories the kustomization does not
// reach may have any name and any content.
type bundle struct {
	ctx    context.Context
	fsys   fs.FS
	limits Limits

	mu sync.Mutex
	// listings holds the entries of each directory listed, by name.
	listings map[string]map[string]fs.DirEntry
	// names holds the sorted names of each directory listed.
	names map[string][]string
	// data holds the content of each file read.
	data map[string][]byte
	// total is the bytes of all files read.
	total int64
	// refused is the first read the bundle refused (a limit, a symlink);
	// failed is the first error reading fsys. Both are kept because
	// kustomize's own messages may not carry them.
	refused *failure.Error
	failed  error
}

// newBundle returns the bundle of fsys, read within limits.
func newBundle(ctx context.Context, fsys fs.FS, limits Limits) *bundle {
	return &bundle{
		ctx: ctx, fsys: fsys, limits: limits,
		listings: map[string]map[string]fs.DirEntry{}, names: map[string][]string{},
		data: map[string][]byte{},
	}
}

// err returns what went wrong reading the bundle, if anything: a refusal
// first, as it is the bundle's fault.
func (b *bundle) err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.refused != nil {
		return b.refused
	}
	return b.failed
}

// stat returns what is at bundle path p ("." is the root).
func (b *bundle) stat(p string) node {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.statLocked(path.Clean(p))
}

func (b *bundle) statLocked(p string) node {
	if p == "." {
		return node{kind: directory}
	}
	if p == ".." || path.IsAbs(p) || strings.HasPrefix(p, "../") {
		return node{}
	}
	parent := b.statLocked(path.Dir(p))
	switch parent.kind {
	case special:
		return parent
	case directory:
	default:
		return node{}
	}
	e, ok := b.listLocked(path.Dir(p))[path.Base(p)]
	if !ok {
		return node{}
	}
	switch {
	case e.IsDir():
		return node{kind: directory}
	case e.Type().IsRegular():
		info, err := e.Info()
		if err != nil {
			_ = b.fail(fmt.Errorf("reading %s: %w", p, err))
			return node{}
		}
		return node{kind: regular, size: info.Size()}
	}
	return node{kind: special, at: p}
}

// list returns the sorted names in directory d.
func (b *bundle) list(d string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	d = path.Clean(d)
	if b.statLocked(d).kind != directory {
		return nil
	}
	b.listLocked(d)
	return b.names[d]
}

// listLocked returns the entries of directory d, listing it the first
// time.
func (b *bundle) listLocked(d string) map[string]fs.DirEntry {
	if l, ok := b.listings[d]; ok {
		return l
	}
	entries, err := fs.ReadDir(b.fsys, d)
	if err != nil {
		_ = b.fail(fmt.Errorf("reading directory %s: %w", d, err))
	}
	l := make(map[string]fs.DirEntry, len(entries))
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		l[e.Name()] = e
		names = append(names, e.Name())
	}
	b.listings[d], b.names[d] = l, names
	return l
}

// isFile reports whether the bundle has a regular file at p.
func (b *bundle) isFile(p string) bool { return b.stat(p).kind == regular }

// isDir reports whether the bundle has a directory at p.
func (b *bundle) isDir(p string) bool { return b.stat(p).kind == directory }

// size returns the size of the regular file at p, 0 for anything else.
func (b *bundle) size(p string) int64 { return b.stat(p).size }

// errNotExist is what reading a path that is not a regular file of the
// bundle returns.
var errNotExist = fs.ErrNotExist

// read returns the content of the regular file at p, reading it the first
// time within the limits.
func (b *bundle) read(p string) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p = path.Clean(p)
	if data, ok := b.data[p]; ok {
		return data, nil
	}
	if err := b.ctx.Err(); err != nil {
		_ = b.fail(fmt.Errorf("reading bundle: %w", err))
		return nil, err
	}
	n := b.statLocked(p)
	switch n.kind {
	case regular:
	case special:
		// A symlink could point out of the bundle; devices and pipes may never end.
		return nil, b.refuse(failure.New(v1alpha2.ReasonInvalidContent,
			"%s: not a regular file: a kustomize bundle may not hold symlinks or special files", n.at))
	default:
		return nil, fmt.Errorf("%s: %w", p, errNotExist)
	}
	if len(b.data) >= b.limits.MaxFiles {
		return nil, b.refuse(failure.New(v1alpha2.ReasonInvalidContent,
			"%s: the build reads more than %d files, the limit of a kustomize bundle", p, b.limits.MaxFiles))
	}
	if err := b.checkSize(p, n.size); err != nil {
		return nil, err
	}
	data, err := b.readFile(p)
	if err != nil {
		return nil, err
	}
	b.data[p] = data
	b.total += int64(len(data))
	return data, nil
}

// readFile reads the file at p, at most one byte over what the limits
// allow: the size its directory reported is not trusted.
func (b *bundle) readFile(p string) ([]byte, error) {
	file, err := b.fsys.Open(p)
	if err != nil {
		return nil, b.fail(fmt.Errorf("reading %s: %w", p, err))
	}
	defer file.Close()
	allowed := min(b.limits.MaxFileBytes, b.limits.MaxTotalBytes-b.total)
	data, err := io.ReadAll(io.LimitReader(file, allowed+1))
	if err != nil {
		return nil, b.fail(fmt.Errorf("reading %s: %w", p, err))
	}
	if err := b.checkSize(p, int64(len(data))); err != nil {
		return nil, err
	}
	return data, nil
}

// checkSize refuses a file of size bytes at p that is over a limit.
func (b *bundle) checkSize(p string, size int64) error {
	if size > b.limits.MaxFileBytes {
		return b.refuse(failure.New(v1alpha2.ReasonInvalidContent,
			"%s: file is over the limit of %d bytes per file", p, b.limits.MaxFileBytes))
	}
	if b.total+size > b.limits.MaxTotalBytes {
		return b.refuse(failure.New(v1alpha2.ReasonInvalidContent,
			"%s: file takes what the build reads over the limit of %d bytes in total", p, b.limits.MaxTotalBytes))
	}
	return nil
}

// refuse keeps f if it is the first refusal and returns it.
func (b *bundle) refuse(f *failure.Error) error {
	if b.refused == nil {
		b.refused = f
	}
	return f
}

// fail keeps err if it is the first error reading fsys and returns it.
func (b *bundle) fail(err error) error {
	if b.failed == nil {
		b.failed = err
	}
	return err
}
