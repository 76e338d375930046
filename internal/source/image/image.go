package image

import (
	"context"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/archive"
	"github.com/rukpak/rukpak/internal/source"
	"github.com/rukpak/rukpak/internal/source/credentials"
	"github.com/rukpak/rukpak/pkg/failure"
)

// Source reads bundle content from images in container registries.
type Source struct {
	creds    *credentials.Reader
	platform string
	limits   archive.Limits
	maxTags  int
	// backoff is how go-containerregistry retries temporary errors (5xx,
	// resets) within one call; tests shorten it.
	backoff remote.Backoff
}

var (
	_ source.Source    = (*Source)(nil)
	_ source.Floating  = (*Source)(nil)
	_ source.Versioned = (*Source)(nil)
)

// Option configures a Source.
type Option func(*Source)

// WithPlatform sets the platform ("os/arch[/variant]") picked from a
// multi-platform index when a source sets none. The default is the
// manager's own, runtime.GOOS/runtime.GOARCH.
func WithPlatform(platform string) Option {
	return func(s *Source) { s.platform = platform }
}

// WithLimits sets the limits of an unpacked image, for all its layers
// together. The default is archive.DefaultLimits().
func WithLimits(l archive.Limits) Option {
	return func(s *Source) { s.limits = l }
}

// New returns a Source reading pull and CA Secrets with creds.
func New(creds *credentials.Reader, opts ...Option) *Source {
	s := &Source{
		creds:    creds,
		platform: runtime.GOOS + "/" + runtime.GOARCH,
		limits:   archive.DefaultLimits(),
		maxTags:  DefaultMaxTags,
		backoff:  remote.Backoff{Duration: time.Second, Factor: 3, Jitter: 0.1, Steps: 3},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// sha256Digest is the only digest form the API accepts as a pin.
var sha256Digest = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// Floating reports whether src is a tag ref or a range of versions
// without a digest pin. An unparsable ref is not floating: Resolve
// reports it.
func (s *Source) Floating(src v1alpha2.BundleSource) bool {
	if src.Image == nil || src.Image.Digest != "" {
		return false
	}
	if src.Image.Versions != "" {
		return true
	}
	ref, err := name.ParseReference(src.Image.Ref)
	if err != nil {
		return false
	}
	_, isTag := ref.(name.Tag)
	return isTag
}

// Resolve returns a copy of src with image.digest set. A ref by digest and
// a source whose digest is set already are pinned without any request; a
// tag is looked up in its registry; with versions, the newest tag in range
// is, and recorded in image.resolvedTag.
func (s *Source) Resolve(ctx context.Context, src v1alpha2.BundleSource) (v1alpha2.BundleSource, error) {
	return s.ResolveWith(ctx, src)
}

// ResolveWith is Resolve, reaching the registry as opts say. It is for
// sources that name images of their own (an oci:// Helm repository).
func (s *Source) ResolveWith(ctx context.Context, src v1alpha2.BundleSource, opts ...CallOption) (v1alpha2.BundleSource, error) {
	img, ref, err := parse(src)
	if err != nil {
		return v1alpha2.BundleSource{}, err
	}
	cl := callOf(opts)
	out := src.DeepCopy()
	if img.Versions != "" && img.Digest == "" {
		if err := s.resolveVersion(ctx, out, cl); err != nil {
			return v1alpha2.BundleSource{}, err
		}
		return *out, nil
	}
	pin, err := pinOf(img, ref)
	if err != nil {
		return v1alpha2.BundleSource{}, err
	}
	if pin != "" {
		out.Image.Digest = pin
		return *out, nil
	}
	c, err := s.connect(ctx, img, cl, ref, "image "+img.Ref)
	if err != nil {
		return v1alpha2.BundleSource{}, err
	}
	defer c.close()
	d, err := c.resolve(ref)
	if err != nil {
		return v1alpha2.BundleSource{}, err
	}
	if !sha256Digest.MatchString(d) {
		return v1alpha2.BundleSource{}, failure.New(v1alpha2.ReasonUnpackFailed,
			"image %s has digest %s: only sha256 digests are supported", img.Ref, d)
	}
	out.Image.Digest = d
	return *out, nil
}

// Unpack writes the content of the image src pins into dir: the layers of
// the image applied in order, or the chart of a Helm chart artifact. It
// fetches repository@digest, never the tag, and verifies the manifest and
// every blob against their digests. The platform (the source's, else the
// default) selects the image of an index; a single image is taken as it
// is. An unpinned source is an error.
func (s *Source) Unpack(ctx context.Context, src v1alpha2.BundleSource, dir string) error {
	_, err := s.unpack(ctx, src, dir, PullLimits{Archive: s.limits}, false, call{})
	return err
}

// UnpackChart is Unpack for a Helm chart artifact only: an image whose
// config is not of Helm's media type is refused (UnpackFailed) before any
// of its layers is read. It is for sources that name charts in registries
// (an oci:// Helm repository), where an image that is not a chart is not
// what was published as one. opts say how the registry is reached.
func (s *Source) UnpackChart(ctx context.Context, src v1alpha2.BundleSource, dir string, opts ...CallOption) error {
	_, err := s.unpack(ctx, src, dir, PullLimits{Archive: s.limits}, true, callOf(opts))
	return err
}

// PullLimits bound what Pull reads of an image.
type PullLimits struct {
	// Archive bounds what the image's layers write, all together.
	Archive archive.Limits
	// MaxLayerBytes bounds the compressed bytes of the image's layers, as
	// its manifest gives them, checked before any layer is read; 0 means
	// no bound but Archive's.
	MaxLayerBytes int64
}

// Pull writes the content of the image the pinned source src names into
// dir, as Unpack does but within lim instead of the source's limits, and
// returns the labels of the image's config. It is for sources that read
// images of their own (a catalog image) with the image source's
// credentials, TLS settings, verification and retries.
func (s *Source) Pull(ctx context.Context, src v1alpha2.BundleSource, dir string, lim PullLimits) (map[string]string, error) {
	img, err := s.unpack(ctx, src, dir, lim, false, call{})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config of image %s: %w", src.Image.Ref, err)
	}
	return cfg.Config.Labels, nil
}

// unpack is Unpack within lim, of a Helm chart artifact only when
// chartOnly, reaching the registry as cl says; it returns the image it
// unpacked.
func (s *Source) unpack(ctx context.Context, src v1alpha2.BundleSource, dir string, lim PullLimits, chartOnly bool, cl call) (v1.Image, error) {
	img, ref, err := parse(src)
	if err != nil {
		return nil, err
	}
	pin, err := pinOf(img, ref)
	if err != nil {
		return nil, err
	}
	if pin == "" {
		return nil, fmt.Errorf("image %s is not pinned to a digest: the source must be resolved before it is unpacked", img.Ref)
	}
	platform, err := parsePlatform(img.Platform, s.platform)
	if err != nil {
		return nil, err
	}
	subject := "image " + img.Ref
	if _, byDigest := ref.(name.Digest); !byDigest {
		subject += "@" + pin
	}
	c, err := s.connect(ctx, img, cl, ref, subject)
	if err != nil {
		return nil, err
	}
	defer c.close()
	if img.Verify != nil && img.Verify.Cosign != nil {
		// Before anything of the image is read.
		if err := s.verifyCosign(ctx, c, img.Verify.Cosign, pin); err != nil {
			return nil, err
		}
	}
	image, err := c.image(pin, platform)
	if err != nil {
		return nil, err
	}
	if chartOnly {
		if err := checkChart(c, image); err != nil {
			return nil, err
		}
	}
	if err := checkLayerBytes(image, lim.MaxLayerBytes, subject); err != nil {
		return nil, err
	}
	return image, s.extract(ctx, c, image, dir, lim.Archive)
}

// checkChart refuses an image that is not a Helm chart artifact.
func checkChart(c *conn, img v1.Image) error {
	m, err := img.Manifest()
	if err != nil {
		return c.classify(err, "reading the manifest of")
	}
	if m.Config.MediaType != helmConfigMediaType {
		return failure.New(v1alpha2.ReasonUnpackFailed, "%s is not a Helm chart: its config is of media type %q, not %q",
			c.subject, m.Config.MediaType, helmConfigMediaType)
	}
	return nil
}

// checkLayerBytes refuses an image whose layers, as its manifest sizes
// them, are more than max bytes (0: no bound).
func checkLayerBytes(img v1.Image, maxBytes int64, subject string) error {
	if maxBytes <= 0 {
		return nil
	}
	m, err := img.Manifest()
	if err != nil {
		return fmt.Errorf("reading the manifest of %s: %w", subject, err)
	}
	var total int64
	for _, l := range m.Layers {
		total += l.Size
	}
	if total > maxBytes {
		return failure.New(v1alpha2.ReasonResourceLimit, "%s has %d bytes of layers, more than the limit of %d", subject, total, maxBytes)
	}
	return nil
}

// parse returns the image member of src and its parsed ref. An "oci://"
// prefix (how Helm names charts in registries) is allowed. A missing
// member or an unparsable ref is a terminal failure.
func parse(src v1alpha2.BundleSource) (*v1alpha2.ImageSource, name.Reference, error) {
	img := src.Image
	if img == nil {
		return nil, nil, failure.New(v1alpha2.ReasonUnpackFailed, "source of type image has no image member")
	}
	ref, err := name.ParseReference(strings.TrimPrefix(img.Ref, "oci://"), nameOptions(img)...)
	if err != nil {
		return nil, nil, failure.New(v1alpha2.ReasonUnpackFailed, "image ref %q cannot be parsed: %v", img.Ref, err)
	}
	return img, ref, nil
}

// nameOptions lets a source that skips TLS verification reach plain-HTTP
// registries too.
func nameOptions(img *v1alpha2.ImageSource) []name.Option {
	if img.InsecureSkipTLSVerify {
		return []name.Option{name.Insecure}
	}
	return nil
}

// pinOf returns the digest img is pinned to ("" for an unpinned tag): the
// digest of a ref by digest, else the digest field. Both set but different
// is a terminal DigestMismatch.
func pinOf(img *v1alpha2.ImageSource, ref name.Reference) (string, error) {
	if img.Digest != "" && !sha256Digest.MatchString(img.Digest) {
		return "", failure.New(v1alpha2.ReasonUnpackFailed, "image digest %q is not of the form sha256:<64 hex digits>", img.Digest)
	}
	d, byDigest := ref.(name.Digest)
	if !byDigest {
		return img.Digest, nil
	}
	if !sha256Digest.MatchString(d.DigestStr()) {
		return "", failure.New(v1alpha2.ReasonUnpackFailed, "image ref %s: only sha256 digests are supported", img.Ref)
	}
	if img.Digest != "" && img.Digest != d.DigestStr() {
		return "", failure.New(v1alpha2.ReasonDigestMismatch,
			"image ref %s names digest %s, but the source is pinned to %s", img.Ref, d.DigestStr(), img.Digest)
	}
	return d.DigestStr(), nil
}
