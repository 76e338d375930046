package image

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/versionrange"
	"github.com/rukpak/rukpak/pkg/failure"
)

// Bounds of listing a repository's tags.
const (
	// DefaultMaxTags is the default cap on the tags of one repository
	// read to select a version.
	DefaultMaxTags = 10000
	// maxTagListBytes caps the bytes of all the tag list pages of one
	// listing, so that a registry cannot make the manager decode an
	// endless document.
	maxTagListBytes int64 = 16 << 20
	// maxTagPages caps the pages of one listing: a registry that answers
	// with empty pages and a next link forever is cut short.
	maxTagPages = 1000
)

// WithMaxTags caps the tags of one repository read to select a version;
// n <= 0 keeps DefaultMaxTags. A repository with more is a ResourceLimit
// failure, not a choice among the tags that happened to be read first.
func WithMaxTags(n int) Option {
	return func(s *Source) {
		if n > 0 {
			s.maxTags = n
		}
	}
}

// repository returns the repository of a source with versions: its ref,
// which must name no tag and no digest.
func repository(img *v1alpha2.ImageSource) (name.Repository, error) {
	repo, err := name.NewRepository(strings.TrimPrefix(img.Ref, "oci://"), nameOptions(img)...)
	if err != nil {
		return name.Repository{}, failure.New(v1alpha2.ReasonUnpackFailed,
			"image ref %q with versions must name a repository, without a tag or digest: %v", img.Ref, err)
	}
	return repo, nil
}

// Tags returns the tags of the repository src's image ref names (a
// repository alone, without a tag or digest), listed as a source with
// versions lists them: with src's pull secret (or the credentials of
// opts) and TLS settings, within the bounds on tags, pages and bytes. It
// is for sources that select among the tags of a repository of their own
// (an oci:// Helm repository).
func (s *Source) Tags(ctx context.Context, src v1alpha2.BundleSource, opts ...CallOption) ([]string, error) {
	img := src.Image
	if img == nil {
		return nil, failure.New(v1alpha2.ReasonUnpackFailed, "source of type %s has no image member", src.Type)
	}
	repo, err := repository(img)
	if err != nil {
		return nil, err
	}
	c, err := s.connect(ctx, img, callOf(opts), repo.Tag("latest"), "repository "+img.Ref)
	if err != nil {
		return nil, err
	}
	defer c.close()
	return c.tags(ctx, s.maxTags)
}

// resolveVersion pins a source with versions: it lists the tags of the
// repository, takes the newest that is a version in the constraint and
// pins the source to its digest, recording the tag. cl says how the
// registry is reached.
func (s *Source) resolveVersion(ctx context.Context, out *v1alpha2.BundleSource, cl call) error {
	img := out.Image
	rng, err := versionrange.Parse(img.Versions)
	if err != nil {
		return failure.New(v1alpha2.ReasonUnpackFailed, "image %s: %v", img.Ref, err)
	}
	repo, err := repository(img)
	if err != nil {
		return err
	}
	c, err := s.connect(ctx, img, cl, repo.Tag("latest"), "repository "+img.Ref)
	if err != nil {
		return err
	}
	defer c.close()
	tags, err := c.tags(ctx, s.maxTags)
	if err != nil {
		return err
	}
	best, ok := rng.Newest(tags)
	if !ok {
		return failure.New(v1alpha2.ReasonSourceNotFound,
			"image %s has no tag in %q (%d tags published, %d of them versions)",
			img.Ref, img.Versions, len(tags), len(versionrange.Sort(tags)))
	}
	tag := repo.Tag(best.Name)
	d, err := c.about("image " + tag.String()).resolve(tag)
	if err != nil {
		return err
	}
	if !sha256Digest.MatchString(d) {
		return failure.New(v1alpha2.ReasonUnpackFailed,
			"image %s has digest %s: only sha256 digests are supported", tag, d)
	}
	img.Digest, img.ResolvedTag = d, best.Name
	return nil
}

// tags lists the tags of c's repository, page by page, up to maxTags tags,
// maxTagPages pages and maxTagListBytes bytes.
func (c *conn) tags(ctx context.Context, maxTags int) ([]string, error) {
	body := &cappedTransport{base: c.transport, left: maxTagListBytes}
	opts := append(slices.Clone(c.opts), remote.WithTransport(body))
	p, err := remote.NewPuller(opts...)
	if err != nil {
		return nil, fmt.Errorf("listing the tags of %s: %w", c.subject, err)
	}
	l, err := p.Lister(ctx, c.repo)
	if err != nil {
		return nil, c.listError(err, body)
	}
	var tags []string
	for pages := 0; l.HasNext(); pages++ {
		if pages == maxTagPages {
			return nil, failure.New(v1alpha2.ReasonResourceLimit,
				"%s: the registry listed its tags in more than %d pages", c.subject, maxTagPages)
		}
		page, err := l.Next(ctx)
		if err != nil {
			return nil, c.listError(err, body)
		}
		tags = append(tags, page.Tags...)
		if len(tags) > maxTags {
			return nil, failure.New(v1alpha2.ReasonResourceLimit,
				"%s has more than %d tags, the most read to select a version", c.subject, maxTags)
		}
	}
	return tags, nil
}

// listError classifies an error of listing tags; a listing cut short by
// the byte cap is a ResourceLimit failure.
func (c *conn) listError(err error, t *cappedTransport) error {
	if t.exceeded.Load() || errors.Is(err, errTagListTooLarge) {
		return failure.New(v1alpha2.ReasonResourceLimit,
			"%s: the registry's list of tags is larger than %d bytes", c.subject, maxTagListBytes)
	}
	return c.classify(err, "listing the tags of")
}

// errTagListTooLarge ends the body of a tag list over the byte cap.
var errTagListTooLarge = errors.New("the list of tags is too large")

// cappedTransport caps the bytes of all the response bodies it reads.
type cappedTransport struct {
	base     http.RoundTripper
	left     int64
	exceeded atomic.Bool
}

// RoundTrip sends req and caps the body of its response.
func (t *cappedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &cappedBody{ReadCloser: resp.Body, t: t}
	return resp, nil
}

// cappedBody counts what is read of a body against its transport's cap.
// Listing reads one body at a time.
type cappedBody struct {
	io.ReadCloser
	t *cappedTransport
}

// Read reads from the body until the cap is reached.
func (b *cappedBody) Read(p []byte) (int, error) {
	if b.t.left <= 0 {
		b.t.exceeded.Store(true)
		return 0, errTagListTooLarge
	}
	if int64(len(p)) > b.t.left {
		p = p[:b.t.left+1] // one byte more tells a body of exactly the cap from a larger one
	}
	n, err := b.ReadCloser.Read(p)
	b.t.left -= int64(n)
	if b.t.left < 0 {
		b.t.exceeded.Store(true)
		return n, errTagListTooLarge
	}
	return n, err
}

// SelectedVersion is the tag pinned selected from its range of
// versions, once pinned names its digest (source.Versioned: never
// downgraded by itself); "" for an image without versions.
func (s *Source) SelectedVersion(pinned v1alpha2.BundleSource) string {
	img := pinned.Image
	if img == nil || img.Versions == "" || img.Digest == "" {
		return ""
	}
	return img.ResolvedTag
}
