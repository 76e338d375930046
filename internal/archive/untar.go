package archive

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// Untar extracts the tar stream r into dir (an existing directory).
//
// A refused entry stops the extraction with a terminal UnpackFailed failure
// naming it; what was extracted before stays in dir, so callers extract into
// a directory of their own and remove it on error.
func Untar(ctx context.Context, r io.Reader, dir string, opts Options) error {
	src := &sourceReader{ctx: ctx, r: r}
	return untar(ctx, src, src, dir, opts)
}

// UntarGzip extracts a gzip-compressed tar stream, enforcing MaxRatio against the compressed bytes read.
//
// The stream is read to its end, so that gzip verifies its checksum; data
// after the end of the tar archive is read (within MaxRatio) but ignored.
func UntarGzip(ctx context.Context, r io.Reader, dir string, opts Options) error {
	src := &sourceReader{ctx: ctx, r: r}
	compressed := &countingReader{r: src}
	zr, err := gzip.NewReader(compressed)
	if errors.Is(err, io.EOF) && src.err == nil {
		return failure.New(v1alpha2.ReasonUnpackFailed, "archive: the gzip stream is empty")
	}
	if err != nil {
		return src.classify("archive: reading the gzip header", err)
	}
	defer func() { _ = zr.Close() }()
	limits := opts.Limits.withDefaults()
	z := &ratioReader{r: zr, compressed: compressed, max: limits.MaxRatio}
	if err := untar(ctx, z, src, dir, opts); err != nil {
		return err
	}
	// Bytes after the last gzip member that do not start another one
	// (padding) end the stream, as they do for gzip -d.
	if _, err := io.Copy(io.Discard, z); err != nil && !errors.Is(err, gzip.ErrHeader) {
		return src.classify("archive: after the last entry", err)
	}
	return nil
}

// untar extracts the tar stream r, which reads src, into dir.
func untar(ctx context.Context, r io.Reader, src *sourceReader, dir string, opts Options) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("archive: opening the destination: %w", err)
	}
	defer func() { _ = root.Close() }()
	x := newExtractor(root, src, opts)
	tr := tar.NewReader(r)
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("archive: %w", err)
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		// tar.ErrInsecurePath comes with a header, whose name the extractor
		// checks (and refuses) itself.
		if err != nil && !(errors.Is(err, tar.ErrInsecurePath) && hdr != nil) {
			return src.classify("archive: reading the next entry", err)
		}
		if err := x.entry(hdr, tr); err != nil {
			return err
		}
	}
}
