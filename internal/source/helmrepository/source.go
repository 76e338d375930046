package helmrepository

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/helmrepo"
	"github.com/rukpak/rukpak/internal/source"
	"github.com/rukpak/rukpak/internal/source/credentials"
	httpsource "github.com/rukpak/rukpak/internal/source/http"
	"github.com/rukpak/rukpak/pkg/failure"
)

// DefaultMaxAge is how long a fetched index answers without a request:
// the shortest poll interval, so that a follower polling that often sees
// every change of the index.
const DefaultMaxAge = v1alpha2.MinPollInterval

// Source reads charts from Helm chart repositories.
type Source struct {
	creds  *credentials.Reader
	http   *httpsource.Source
	images Images
	cache  *cache
	lim    helmrepo.Limits
	maxAge time.Duration
}

var (
	_ source.Source    = (*Source)(nil)
	_ source.Floating  = (*Source)(nil)
	_ source.Versioned = (*Source)(nil)
)

// Option configures a Source.
type Option func(*Source)

// WithIndexLimits bounds what is read of an index; the default is
// helmrepo.DefaultLimits.
func WithIndexLimits(l helmrepo.Limits) Option { return func(s *Source) { s.lim = l } }

// WithMaxAge is how long a fetched index answers without a request; the
// default is DefaultMaxAge.
func WithMaxAge(d time.Duration) Option { return func(s *Source) { s.maxAge = d } }

// WithWorkDir is where fetched indexes are kept; "" keeps the system's
// temporary directory.
func WithWorkDir(dir string) Option { return func(s *Source) { s.cache.dir = dir } }

// New returns a Source reading Secrets with creds, downloading archives
// of HTTP(S) repositories with h and reading OCI repositories with images.
func New(creds *credentials.Reader, h *httpsource.Source, images Images, opts ...Option) *Source {
	s := &Source{creds: creds, http: h, images: images, cache: newCache(), lim: helmrepo.DefaultLimits, maxAge: DefaultMaxAge}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Floating reports whether src is not pinned to an archive yet.
func (s *Source) Floating(src v1alpha2.BundleSource) bool {
	return src.HelmRepository != nil && src.HelmRepository.SHA256 == ""
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Resolve pins src to the archive of the version it selects in the
// repository's index; a pinned src is returned as it is.
func (s *Source) Resolve(ctx context.Context, src v1alpha2.BundleSource) (v1alpha2.BundleSource, error) {
	h, err := member(src)
	if err != nil {
		return src, err
	}
	if h.SHA256 != "" {
		return src, nil
	}
	if IsOCI(h) {
		return s.resolveOCI(ctx, src)
	}
	chart, err := s.chart(ctx, h)
	if err != nil {
		return src, err
	}
	constraint := h.Version
	if constraint == "" {
		constraint = "*"
	}
	v, err := chart.Select(constraint)
	if err != nil {
		return src, failure.New(v1alpha2.ReasonSourceNotFound, "Helm repository %s: %v", source.RedactURL(h.URL), err)
	}
	u, err := helmrepo.ChartURL(h.URL, v)
	if err != nil {
		return src, failure.New(v1alpha2.ReasonUnpackFailed, "Helm repository %s: %v", source.RedactURL(h.URL), err)
	}
	digest := strings.TrimPrefix(v.Digest, "sha256:")
	if !sha256Hex.MatchString(digest) {
		// No digest in the index (or not a sha256): the archive is hashed.
		pinned, err := s.http.Resolve(ctx, v1alpha2.BundleSource{Type: v1alpha2.SourceTypeHTTP, HTTP: s.archive(h, u, "")})
		if err != nil {
			return src, err
		}
		digest = pinned.HTTP.SHA256
	}
	out := *src.DeepCopy()
	out.HelmRepository.ResolvedVersion, out.HelmRepository.ResolvedURL, out.HelmRepository.SHA256 = v.Version, u, digest
	return out, nil
}

// SelectedVersion is the chart version pinned selected, once pinned
// names its archive and digest (source.Versioned: never downgraded by
// itself).
func (s *Source) SelectedVersion(pinned v1alpha2.BundleSource) string {
	h := pinned.HelmRepository
	if h == nil || h.SHA256 == "" || h.ResolvedURL == "" {
		return ""
	}
	return h.ResolvedVersion
}

// Unpack downloads the pinned archive of src, checks its sha256 and
// extracts it into dir.
func (s *Source) Unpack(ctx context.Context, src v1alpha2.BundleSource, dir string) error {
	h, err := member(src)
	if err != nil {
		return err
	}
	if h.SHA256 == "" || h.ResolvedURL == "" {
		return fmt.Errorf("chart %s of Helm repository %s is not pinned", h.Chart, source.RedactURL(h.URL))
	}
	if IsOCI(h) {
		return s.unpackOCI(ctx, src, dir)
	}
	if strings.HasPrefix(h.ResolvedURL, OCIScheme) {
		return failure.New(v1alpha2.ReasonUnpackFailed, "Helm repository %s: resolvedURL %s is not http(s)", source.RedactURL(h.URL), h.ResolvedURL)
	}
	if h.Verify != nil && h.Verify.Provenance != nil {
		// Before anything of the archive is extracted.
		if err := s.verifyProvenance(ctx, h); err != nil {
			return err
		}
	}
	return s.http.Unpack(ctx, v1alpha2.BundleSource{Type: v1alpha2.SourceTypeHTTP, HTTP: s.archive(h, h.ResolvedURL, h.SHA256)}, dir)
}

// archive is the http source of a chart archive at u: with the
// repository's TLS settings, and its credentials only on its host.
func (s *Source) archive(h *v1alpha2.HelmRepositorySource, u, sha string) *v1alpha2.HTTPSource {
	out := &v1alpha2.HTTPSource{URL: u, SHA256: sha, CASecret: h.CASecret, InsecureSkipTLSVerify: h.InsecureSkipTLSVerify}
	if sameHost(h.URL, u) {
		out.Auth = h.Auth
	}
	return out
}

// sameHost tells whether a and b have the same scheme, host and port.
func sameHost(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Scheme == ub.Scheme && strings.EqualFold(ua.Host, ub.Host)
}

func member(src v1alpha2.BundleSource) (*v1alpha2.HelmRepositorySource, error) {
	if src.HelmRepository == nil {
		return nil, fmt.Errorf("source of type %s has no helmRepository member", src.Type)
	}
	return src.HelmRepository, nil
}
