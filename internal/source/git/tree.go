package git

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

const (
	dirMode  = 0o755
	fileMode = 0o644
	execMode = 0o755
)

// writer writes the tree of a commit into a directory: directories and
// regular files only (executable or not), submodules skipped, symlinks and
// any other entry refused, within caps on the number of entries and on the
// total size of the files. Tree entries are untrusted: each name must be a
// single path element, so nothing is written outside the directory.
type writer struct {
	sto      storer.EncodedObjectStorer
	root     string // the directory written into
	repo     string // the repository, for messages
	maxBytes int64
	maxFiles int

	bytes int64 // written so far
	files int   // files and directories written so far
}

// writeCommit writes the tree of sub ("." for the root) of commit c.
func (w *writer) writeCommit(ctx context.Context, c *object.Commit, sub string) error {
	tree, err := c.Tree()
	if err != nil {
		return fmt.Errorf("%s: reading the tree of commit %s: %w", w.repo, c.Hash, err)
	}
	if sub != "." {
		tree, err = tree.Tree(sub)
		if errors.Is(err, object.ErrDirectoryNotFound) {
			return failure.New(v1alpha2.ReasonSourceNotFound, "directory %q not found in commit %s of repository %s", sub, c.Hash, w.repo)
		}
		if err != nil {
			return fmt.Errorf("%s: reading directory %q of commit %s: %w", w.repo, sub, c.Hash, err)
		}
	}
	return w.writeTree(ctx, tree, "")
}

// writeTree writes the entries of t at the slash path rel of the root.
func (w *writer) writeTree(ctx context.Context, t *object.Tree, rel string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("writing %s: %w", w.repo, err)
	}
	for _, e := range t.Entries {
		if !validName(e.Name) {
			return failure.New(v1alpha2.ReasonUnpackFailed, "repository %s: directory %q has an entry named %q, which is not a plain file name", w.repo, dirName(rel), e.Name)
		}
		p := path.Join(rel, e.Name)
		var err error
		switch e.Mode {
		case filemode.Dir:
			err = w.writeDir(ctx, p, e.Hash)
		case filemode.Regular, filemode.Deprecated:
			err = w.writeFile(p, e.Hash, fileMode)
		case filemode.Executable:
			err = w.writeFile(p, e.Hash, execMode)
		case filemode.Submodule:
			// A submodule is another repository: not part of this content.
		case filemode.Symlink:
			err = failure.New(v1alpha2.ReasonUnpackFailed, "repository %s: %s is a symbolic link; symbolic links are not supported in bundle content", w.repo, p)
		default:
			err = failure.New(v1alpha2.ReasonUnpackFailed, "repository %s: %s has the unsupported mode %s", w.repo, p, e.Mode)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// writeDir creates the directory p and writes the tree h into it.
func (w *writer) writeDir(ctx context.Context, p string, h plumbing.Hash) error {
	if err := w.count(p, 0); err != nil {
		return err
	}
	full := w.path(p)
	if err := os.Mkdir(full, dirMode); err != nil {
		return w.createError(p, err)
	}
	if err := os.Chmod(full, dirMode); err != nil { // independent of the umask
		return fmt.Errorf("%s: creating %s: %w", w.repo, p, err)
	}
	sub, err := object.GetTree(w.sto, h)
	if err != nil {
		return fmt.Errorf("%s: reading tree %s of %s: %w", w.repo, h, p, err)
	}
	return w.writeTree(ctx, sub, p)
}

// writeFile writes the blob h as the file p with mode.
func (w *writer) writeFile(p string, h plumbing.Hash, mode os.FileMode) error {
	blob, err := object.GetBlob(w.sto, h)
	if err != nil {
		return fmt.Errorf("%s: reading blob %s of %s: %w", w.repo, h, p, err)
	}
	if err := w.count(p, blob.Size); err != nil {
		return err
	}
	rd, err := blob.Reader()
	if err != nil {
		return fmt.Errorf("%s: reading %s: %w", w.repo, p, err)
	}
	defer func() { _ = rd.Close() }()
	f, err := os.OpenFile(w.path(p), os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return w.createError(p, err)
	}
	n, err := io.Copy(f, io.LimitReader(rd, blob.Size+1))
	if err == nil && n != blob.Size {
		err = fmt.Errorf("blob %s has %d bytes, not %d", h, n, blob.Size)
	}
	if err == nil {
		err = f.Chmod(mode) // independent of the umask
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: writing %s: %w", w.repo, p, err)
	}
	return nil
}

// count adds one entry of size bytes, failing when a cap is exceeded.
func (w *writer) count(p string, size int64) error {
	w.files++
	if w.files > w.maxFiles {
		return failure.New(v1alpha2.ReasonResourceLimit, "repository %s: the content has more than the limit of %d files and directories (at %s)", w.repo, w.maxFiles, p)
	}
	if size > w.maxBytes-w.bytes {
		return failure.New(v1alpha2.ReasonResourceLimit, "repository %s: the content is larger than the limit of %d bytes (at %s)", w.repo, w.maxBytes, p)
	}
	w.bytes += size
	return nil
}

// createError reports a failure to create p; an existing p means the tree
// lists the same name twice.
func (w *writer) createError(p string, err error) error {
	if errors.Is(err, fs.ErrExist) {
		return failure.New(v1alpha2.ReasonUnpackFailed, "repository %s: the tree lists %s twice", w.repo, p)
	}
	return fmt.Errorf("%s: creating %s: %w", w.repo, p, err)
}

// path returns the file path of the slash path p of the root.
func (w *writer) path(p string) string { return filepath.Join(w.root, filepath.FromSlash(p)) }

// validName reports whether a tree entry name is a single path element.
func validName(n string) bool {
	return n != "" && n != "." && n != ".." && !strings.ContainsAny(n, "/\x00")
}

// dirName names the directory rel in messages.
func dirName(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}
