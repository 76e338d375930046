package archive

import (
	"archive/tar"
	"compress/flate"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// sourceReader reads the caller's stream. It fails reads once ctx is done,
// so that a cancelled extraction stops even in the middle of a large file,
// and remembers the first error (other than io.EOF) the stream returned, so
// that a broken connection is told apart from a corrupt archive.
type sourceReader struct {
	ctx context.Context
	r   io.Reader
	err error
}

func (s *sourceReader) Read(p []byte) (int, error) {
	if err := s.ctx.Err(); err != nil {
		s.fail(err)
		return 0, err
	}
	n, err := s.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		s.fail(err)
	}
	return n, err
}

func (s *sourceReader) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

// classify returns err, met at where (such as `archive entry "a"`), as a
// terminal failure if it is one already or the archive is corrupt, and
// wrapped as a transient error when it came from reading the stream (a
// broken connection, a cancelled context) or writing the files.
func (s *sourceReader) classify(where string, err error) error {
	if f := failure.As(err); f != nil {
		return failure.New(f.Reason, "%s: %s", where, f.Message)
	}
	if s.err == nil && corrupt(err) {
		return failure.New(v1alpha2.ReasonUnpackFailed, "%s: the archive is corrupt: %v", where, err)
	}
	return fmt.Errorf("%s: %w", where, err)
}

// countingReader counts the bytes read from r.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// ratioReader reads a decompressed stream and fails once it has produced
// more than ratioGrace bytes and more than max times the compressed bytes
// read so far.
type ratioReader struct {
	r          io.Reader
	compressed *countingReader
	max        int64
	n          int64
}

func (z *ratioReader) Read(p []byte) (int, error) {
	n, err := z.r.Read(p)
	z.n += int64(n)
	if z.n > ratioGrace && z.n/z.max > z.compressed.n {
		return n, failure.New(v1alpha2.ReasonUnpackFailed,
			"gzip stream expands more than %d times (%d bytes from %d compressed bytes), over the limit",
			z.max, z.n, z.compressed.n)
	}
	return n, err
}

// corrupt reports whether err says the stream is not a valid (gzip) tar
// stream, which reading it again will not change.
func corrupt(err error) bool {
	var flateErr flate.CorruptInputError
	return errors.Is(err, tar.ErrHeader) || errors.Is(err, gzip.ErrHeader) || errors.Is(err, gzip.ErrChecksum) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &flateErr)
}
