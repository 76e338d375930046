package helm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// budget counts the files and bytes read for one chart against the limits.
type budget struct {
	limits Limits
	files  int
	bytes  int64
}

// take counts one file of size bytes named name, refusing it when it is
// over a limit.
func (b *budget) take(name string, size int64) error {
	if b.files++; b.files > b.limits.MaxFiles {
		return failure.New(v1alpha2.ReasonInvalidContent,
			"%s: chart has more than %d files, the limit per chart", name, b.limits.MaxFiles)
	}
	if size > b.limits.MaxFileBytes {
		return failure.New(v1alpha2.ReasonInvalidContent,
			"%s: file is over the limit of %d bytes per file", name, b.limits.MaxFileBytes)
	}
	if size > b.limits.MaxTotalBytes-b.bytes {
		return failure.New(v1alpha2.ReasonInvalidContent,
			"%s: file takes the chart over the limit of %d bytes in total", name, b.limits.MaxTotalBytes)
	}
	b.bytes += size
	return nil
}

// allowed is the most bytes the next file may hold.
func (b *budget) allowed() int64 {
	return min(b.limits.MaxFileBytes, b.limits.MaxTotalBytes-b.bytes)
}

// read reads r, named name, within the limits and counts it. It reads one
// byte more than allowed to tell a file that is too large.
func (b *budget) read(name string, r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, b.allowed()+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if err := b.take(name, int64(len(data))); err != nil {
		return nil, err
	}
	return data, nil
}

// readFile reads the regular file p of fsys, described by info (which
// must not follow symlinks), within the limits.
func (b *budget) readFile(fsys fs.FS, p string, info fs.FileInfo) ([]byte, error) {
	// A symlink could point out of the bundle; devices and pipes may never end.
	if !info.Mode().IsRegular() {
		return nil, failure.New(v1alpha2.ReasonInvalidContent, "%s: not a regular file", p)
	}
	if info.Size() > b.allowed() {
		return nil, b.take(p, info.Size())
	}
	f, err := fsys.Open(p)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	defer f.Close()
	return b.read(p, f)
}

// readPath reads the regular file p of fsys within the limits.
func (b *budget) readPath(fsys fs.FS, p string) ([]byte, error) {
	info, err := fs.Lstat(fsys, p)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	return b.readFile(fsys, p, info)
}

// isSubchartArchive reports whether the chart file name is a packaged
// subchart: a .tgz file in a charts/ directory.
func isSubchartArchive(name string) bool {
	return path.Ext(name) == ".tgz" && path.Base(path.Dir(name)) == "charts"
}

// maxArchiveDepth is how deep packaged subcharts may nest in each other.
const maxArchiveDepth = 16

// scanArchive counts the entries of the packaged chart data, named name,
// against the limits before Helm's loader unpacks it in memory, and
// recursively those of the subchart archives it holds. An archive that
// cannot be read is left for the loader to report.
func (b *budget) scanArchive(name string, data []byte, depth int) error {
	if depth > maxArchiveDepth {
		return failure.New(v1alpha2.ReasonInvalidContent,
			"%s: packaged subcharts nest deeper than %d levels", name, maxArchiveDepth)
	}
	// Errors reading the archive are left to the loader, which reports
	// them in Helm's words: the scan only stops.
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil
	}
	defer gz.Close()
	zr := tar.NewReader(gz)
	for {
		hd, err := zr.Next()
		if err != nil {
			return nil
		}
		entry := name + ": " + hd.Name
		if hd.Size > b.allowed() {
			return b.take(entry, hd.Size)
		}
		// Helm drops the first path element (the chart's directory).
		_, inner, _ := strings.Cut(strings.ReplaceAll(hd.Name, "\\", "/"), "/")
		if !isSubchartArchive(inner) {
			n, err := io.Copy(io.Discard, io.LimitReader(zr, b.allowed()+1))
			if err != nil {
				return nil
			}
			if err := b.take(entry, n); err != nil {
				return err
			}
			continue
		}
		sub, err := b.read(entry, zr)
		if err != nil {
			if failure.As(err) != nil {
				return err
			}
			return nil
		}
		if err := b.scanArchive(entry, sub, depth+1); err != nil {
			return err
		}
	}
}
