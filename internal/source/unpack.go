package source

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/metrics"
	"github.com/rukpak/rukpak/pkg/failure"
)

// Unpack writes every pinned source into dir (an existing empty directory), each at its Destination sub-path.
//
// Each source is unpacked into a temporary directory of its own next to dir
// (on the same filesystem, removed afterwards), and its files are then moved
// into dir at the source's destination, merging directories. A single
// source at the root of the tree (the common case) has nothing to merge
// with and is unpacked into dir itself; its tree is checked as a merge
// would check it. On failure dir may hold part of the content: the caller
// removes it. dir ends up
// holding only the content. Two sources writing the same file (or one a file
// where another has a directory) is a terminal SourceConflict failure; a
// destination that is absolute or escapes the tree is a terminal
// UnpackFailed failure. Errors of a source are prefixed with its index and
// type.
func (r Registry) Unpack(ctx context.Context, pinned []v1alpha2.BundleSource, dir string) error {
	m := &merger{dir: dir, paths: map[string]claim{}}
	if len(pinned) == 1 {
		if dest, err := CleanPath(pinned[0].Destination); err == nil && dest == "." {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("unpacking sources: %w", err)
			}
			return r.unpackInPlace(ctx, dir, &pinned[0])
		}
	}
	for i := range pinned {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("unpacking sources: %w", err)
		}
		if err := r.unpackOne(ctx, m, i, &pinned[i]); err != nil {
			return err
		}
	}
	return nil
}

// unpackOne unpacks the source of index i into a temporary directory and
// merges it into m.
func (r Registry) unpackOne(ctx context.Context, m *merger, i int, src *v1alpha2.BundleSource) error {
	s, err := r.get(src.Type)
	if err != nil {
		return fmt.Errorf("source %d (%s): %w", i, src.Type, err)
	}
	dest, err := CleanPath(src.Destination)
	if err != nil {
		return fmt.Errorf("source %d (%s): destination: %w", i, src.Type, err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(m.dir), "."+filepath.Base(m.dir)+".src-")
	if err != nil {
		return fmt.Errorf("source %d (%s): creating temporary directory: %w", i, src.Type, err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	began := time.Now()
	err = s.Unpack(ctx, *src, tmp)
	metrics.Since(metrics.SourceFetchSeconds.WithLabelValues(string(src.Type), metrics.Result(err)), began)
	if err != nil {
		return fmt.Errorf("source %d (%s): %w", i, src.Type, err)
	}
	metrics.SourceFetchBytes.WithLabelValues(string(src.Type)).Add(float64(treeSize(tmp)))
	return m.merge(tmp, dest, claim{index: i, typ: src.Type})
}

// unpackInPlace unpacks src, the only source, into dir at its root: no
// other source's tree is merged with it, so it is not moved from a
// temporary directory. As merge does, it refuses anything but regular
// files and directories.
func (r Registry) unpackInPlace(ctx context.Context, dir string, src *v1alpha2.BundleSource) error {
	s, err := r.get(src.Type)
	if err != nil {
		return fmt.Errorf("source 0 (%s): %w", src.Type, err)
	}
	began := time.Now()
	err = s.Unpack(ctx, *src, dir)
	metrics.Since(metrics.SourceFetchSeconds.WithLabelValues(string(src.Type), metrics.Result(err)), began)
	if err != nil {
		return fmt.Errorf("source 0 (%s): %w", src.Type, err)
	}
	var size int64
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("source 0 (%s): reading unpacked content: %w", src.Type, err)
		}
		switch {
		case d.IsDir():
		case d.Type().IsRegular():
			if info, err := d.Info(); err == nil {
				size += info.Size()
			}
		default:
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return fmt.Errorf("source 0 (%s): %w", src.Type, err)
			}
			return failure.New(v1alpha2.ReasonUnpackFailed, "source 0 (%s) wrote %s, which is not a regular file or directory (%s)",
				src.Type, filepath.ToSlash(rel), d.Type())
		}
		return nil
	})
	metrics.SourceFetchBytes.WithLabelValues(string(src.Type)).Add(float64(size))
	return err
}

// treeSize is the bytes of the regular files under dir.
func treeSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
