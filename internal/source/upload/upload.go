package upload

import (
	"context"
	"fmt"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/archive"
	"github.com/rukpak/rukpak/internal/source"
	"github.com/rukpak/rukpak/internal/upload"
	"github.com/rukpak/rukpak/pkg/failure"
)

// Source reads uploads from a Store.
type Source struct {
	store  *upload.Store
	limits archive.Limits
}

var _ source.Source = (*Source)(nil)

// Option configures a Source.
type Option func(*Source)

// WithLimits sets the limits of what one upload may unpack to
// (archive.DefaultLimits).
func WithLimits(l archive.Limits) Option { return func(s *Source) { s.limits = l } }

// New returns a Source reading uploads from store.
func New(store *upload.Store, opts ...Option) *Source {
	s := &Source{store: store, limits: archive.DefaultLimits()}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Resolve returns src as it is: its digest is the pin. A missing upload is
// a terminal SourceNotFound failure.
func (s *Source) Resolve(ctx context.Context, src v1alpha2.BundleSource) (v1alpha2.BundleSource, error) {
	if src.Upload == nil {
		return v1alpha2.BundleSource{}, failure.New(v1alpha2.ReasonUnpackFailed, "source of type upload has no upload member")
	}
	if _, err := s.store.Stat(ctx, src.Upload.Digest); err != nil {
		return v1alpha2.BundleSource{}, err
	}
	return src, nil
}

// Unpack extracts the upload of src into dir. A missing upload or chunk is
// a terminal SourceNotFound failure, content that does not match its digest
// a terminal DigestMismatch failure, and an archive the extractor refuses a
// terminal UnpackFailed failure.
func (s *Source) Unpack(ctx context.Context, src v1alpha2.BundleSource, dir string) error {
	if src.Upload == nil {
		return failure.New(v1alpha2.ReasonUnpackFailed, "source of type upload has no upload member")
	}
	digest := src.Upload.Digest
	r, err := s.store.Open(ctx, digest)
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }()
	err = archive.UntarGzip(ctx, r, dir, archive.Options{Limits: s.limits})
	if err == nil {
		// The extractor may stop before the end; the archive's digest is
		// checked there.
		return r.Verify()
	}
	if failure.As(err) != nil {
		// Content the extractor refuses may not be the uploaded content
		// (chunks in another order): report that instead.
		if verr := failure.As(r.Verify()); verr != nil && verr.Reason != v1alpha2.ReasonUnpackFailed {
			return verr
		}
		return fmt.Errorf("upload %s: %w", digest, err)
	}
	return fmt.Errorf("unpacking upload %s: %w", digest, err)
}
