package http

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/archive"
	"github.com/rukpak/rukpak/internal/source"
	"github.com/rukpak/rukpak/internal/source/credentials"
	"github.com/rukpak/rukpak/pkg/failure"
)

const (
	defaultTimeout       = 60 * time.Second
	defaultMaxSize int64 = 256 << 20
)

// Source reads bundle content from .tar.gz archives served over HTTP(S).
type Source struct {
	creds   *credentials.Reader
	timeout time.Duration
	maxSize int64
	limits  archive.Limits
}

var (
	_ source.Source   = (*Source)(nil)
	_ source.Floating = (*Source)(nil)
)

// Option configures a Source.
type Option func(*Source)

// WithTimeout bounds each download, from the request to the last byte of
// the response; the default is 60s.
func WithTimeout(d time.Duration) Option { return func(s *Source) { s.timeout = d } }

// WithMaxSize bounds the size of a downloaded (compressed) archive; the
// default is 256 MiB.
func WithMaxSize(n int64) Option { return func(s *Source) { s.maxSize = n } }

// WithArchiveLimits bounds what an archive may unpack to; the default is
// archive.DefaultLimits().
func WithArchiveLimits(l archive.Limits) Option { return func(s *Source) { s.limits = l } }

// New returns a Source reading Secrets (credentials, CA bundles) with creds.
func New(creds *credentials.Reader, opts ...Option) *Source {
	s := &Source{creds: creds, timeout: defaultTimeout, maxSize: defaultMaxSize, limits: archive.DefaultLimits()}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Floating reports whether src has no sha256 and so must be downloaded to be
// pinned.
func (s *Source) Floating(src v1alpha2.BundleSource) bool {
	return src.HTTP != nil && src.HTTP.SHA256 == ""
}

// Resolve returns src as it is when it has a sha256. Otherwise it downloads
// the archive and returns a copy of src with sha256 set to the archive's
// (lowercase hex).
func (s *Source) Resolve(ctx context.Context, src v1alpha2.BundleSource) (v1alpha2.BundleSource, error) {
	h, err := member(src)
	if err != nil {
		return v1alpha2.BundleSource{}, err
	}
	if h.SHA256 != "" {
		return src, nil
	}
	sum, err := s.download(ctx, h, io.Discard)
	if err != nil {
		return v1alpha2.BundleSource{}, err
	}
	out := src.DeepCopy()
	out.HTTP.SHA256 = sum
	return *out, nil
}

// Unpack downloads the archive of the pinned source src into a temporary
// file next to dir, checks its sha256, and only then extracts it into dir.
// A different sha256 is a terminal DigestMismatch failure that leaves dir
// as it was; an archive the archive package refuses is a terminal
// UnpackFailed failure.
func (s *Source) Unpack(ctx context.Context, src v1alpha2.BundleSource, dir string) error {
	h, err := member(src)
	if err != nil {
		return err
	}
	u := redact(h.URL)
	if h.SHA256 == "" {
		return fmt.Errorf("http source %s is not pinned to a sha256: the source must be resolved before it is unpacked", u)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".http-")
	if err != nil {
		return fmt.Errorf("http source %s: creating a temporary directory: %w", u, err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	f, err := os.Create(filepath.Join(tmp, "archive.tar.gz"))
	if err != nil {
		return fmt.Errorf("http source %s: %w", u, err)
	}
	defer func() { _ = f.Close() }()
	sum, err := s.download(ctx, h, f)
	if err != nil {
		return err
	}
	if sum != h.SHA256 {
		return failure.New(v1alpha2.ReasonDigestMismatch, "http source %s: sha256 is %s, want %s", u, sum, h.SHA256)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("http source %s: %w", u, err)
	}
	if err := archive.UntarGzip(ctx, bufio.NewReader(f), dir, archive.Options{Limits: s.limits}); err != nil {
		return fmt.Errorf("http source %s: %w", u, err)
	}
	return nil
}

// member returns the http member of src, which the API requires for the
// http type.
func member(src v1alpha2.BundleSource) (*v1alpha2.HTTPSource, error) {
	if src.HTTP == nil {
		return nil, failure.New(v1alpha2.ReasonUnpackFailed, "source of type http has no http member")
	}
	return src.HTTP, nil
}
