package kustomize

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"

	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// bundle is a bundle copied into kustomize's in-memory file system.
type bundle struct {
	fSys filesys.FileSystem
	// sizes holds the size of each regular file, by path in the bundle.
	sizes map[string]int64
	// dirs holds each directory, by path in the bundle ("." is the root).
	dirs map[string]bool
	// total is the bytes of all files.
	total int64
}

// memPath returns where the bundle path p is in the in-memory file system.
func memPath(p string) string {
	return path.Join(mountDir, p)
}

// read returns the content of the file at bundle path p.
func (b *bundle) read(p string) ([]byte, error) {
	data, err := b.fSys.ReadFile(memPath(p))
	if err != nil {
		return nil, fmt.Errorf("reading %s from memory: %w", p, err)
	}
	return data, nil
}

// load copies fsys into a new in-memory file system within limits.
func load(ctx context.Context, fsys fs.FS, limits Limits) (*bundle, error) {
	b := &bundle{fSys: filesys.MakeFsInMemory(), sizes: map[string]int64{}, dirs: map[string]bool{}}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("reading %s: %w", p, err)
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("reading bundle: %w", err)
		}
		if d.IsDir() {
			b.dirs[p] = true
			if err := b.fSys.MkdirAll(memPath(p)); err != nil {
				return fmt.Errorf("copying %s to memory: %w", p, err)
			}
			return nil
		}
		return b.copyFile(fsys, p, d, limits)
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// copyFile copies the file at p within limits.
func (b *bundle) copyFile(fsys fs.FS, p string, d fs.DirEntry, limits Limits) error {
	// A symlink could point out of the bundle; devices and pipes may never end.
	if !d.Type().IsRegular() {
		return failure.New(v1alpha2.ReasonInvalidContent,
			"%s: not a regular file: a kustomize bundle may not hold symlinks or special files", p)
	}
	if len(b.sizes) >= limits.MaxFiles {
		return failure.New(v1alpha2.ReasonInvalidContent,
			"%s: bundle has more than %d files, the limit of a kustomize bundle", p, limits.MaxFiles)
	}
	info, err := d.Info()
	if err != nil {
		return fmt.Errorf("reading %s: %w", p, err)
	}
	if err := b.checkSize(p, info.Size(), limits); err != nil {
		return err
	}
	file, err := fsys.Open(p)
	if err != nil {
		return fmt.Errorf("reading %s: %w", p, err)
	}
	defer file.Close()
	// Do not trust the size the file system reported: read one byte more
	// than allowed to tell a file that grew from one that fits.
	allowed := min(limits.MaxFileBytes, limits.MaxTotalBytes-b.total)
	data, err := io.ReadAll(io.LimitReader(file, allowed+1))
	if err != nil {
		return fmt.Errorf("reading %s: %w", p, err)
	}
	if err := b.checkSize(p, int64(len(data)), limits); err != nil {
		return err
	}
	if err := b.fSys.WriteFile(memPath(p), data); err != nil {
		return fmt.Errorf("copying %s to memory: %w", p, err)
	}
	b.total += int64(len(data))
	b.sizes[p] = int64(len(data))
	return nil
}

// checkSize refuses a file of size bytes at p that is over a limit.
func (b *bundle) checkSize(p string, size int64, limits Limits) error {
	if size > limits.MaxFileBytes {
		return failure.New(v1alpha2.ReasonInvalidContent,
			"%s: file is over the limit of %d bytes per file", p, limits.MaxFileBytes)
	}
	if b.total+size > limits.MaxTotalBytes {
		return failure.New(v1alpha2.ReasonInvalidContent,
			"%s: file takes the bundle over the limit of %d bytes in total", p, limits.MaxTotalBytes)
	}
	return nil
}
