package helmrepository

import (
	"context"
	"fmt"
	"strings"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/source/image"
	"github.com/rukpak/rukpak/internal/versionrange"
	"github.com/rukpak/rukpak/pkg/failure"
)

// OCIScheme prefixes the URL of an OCI registry repository of charts.
const OCIScheme = "oci://"

// Images reads charts from OCI registries: the image source, which lists
// a repository's tags, pins a tag to its manifest's digest and pulls a
// chart artifact by digest, with pull secrets or other credentials (opts),
// TLS settings and cosign verification.
type Images interface {
	// ResolveWith pins an image source's tag to its manifest's digest.
	ResolveWith(ctx context.Context, src v1alpha2.BundleSource, opts ...image.CallOption) (v1alpha2.BundleSource, error)
	// Tags lists the tags of the repository src's image ref names.
	Tags(ctx context.Context, src v1alpha2.BundleSource, opts ...image.CallOption) ([]string, error)
	// UnpackChart unpacks the Helm chart artifact src pins, and refuses
	// an image that is not one.
	UnpackChart(ctx context.Context, src v1alpha2.BundleSource, dir string, opts ...image.CallOption) error
}

var _ Images = (*image.Source)(nil)

// IsOCI tells whether h names an OCI registry repository of charts.
func IsOCI(h *v1alpha2.HelmRepositorySource) bool {
	return h != nil && strings.HasPrefix(h.URL, OCIScheme)
}

// OCIRepository is the registry repository of h's chart, without the
// scheme: the repository's URL and the chart's name, as Helm appends it.
func OCIRepository(h *v1alpha2.HelmRepositorySource) string {
	return strings.TrimSuffix(strings.TrimPrefix(h.URL, OCIScheme), "/") + "/" + h.Chart
}

// OCITag is the tag of a chart version in a registry: helm push writes
// "+" (not allowed in a tag) as "_".
func OCITag(version string) string { return strings.ReplaceAll(version, "+", "_") }

// TagVersion is the chart version a tag stands for: OCITag undone.
func TagVersion(tag string) string { return strings.ReplaceAll(tag, "_", "+") }

// ImageSource is the image source that reads ref, a tag or the repository
// of h's chart, with h's pull secret, TLS settings and verification; a
// non-empty digest pins it. Its calls take ImageOptions(h).
func ImageSource(h *v1alpha2.HelmRepositorySource, ref, digest string) v1alpha2.BundleSource {
	img := &v1alpha2.ImageSource{Ref: ref, Digest: digest, PullSecret: h.PullSecret,
		CASecret: h.CASecret, InsecureSkipTLSVerify: h.InsecureSkipTLSVerify}
	if h.Verify != nil && h.Verify.Cosign != nil {
		img.Verify = &v1alpha2.ImageVerification{Cosign: h.Verify.Cosign}
	}
	return v1alpha2.BundleSource{Type: v1alpha2.SourceTypeImage, Image: img}
}

// ImageOptions are the options of the image source's calls for h: its
// auth Secret (username and password, or a registry token) in place of a
// pull secret, when it names one.
func ImageOptions(h *v1alpha2.HelmRepositorySource) []image.CallOption {
	if h.Auth == nil {
		return nil
	}
	return []image.CallOption{image.WithAuth(h.Auth)}
}

// NewestTag returns the tag of the newest chart version in r among tags,
// with the version it stands for.
func NewestTag(tags []string, r versionrange.Range) (tag, version string, ok bool) {
	byVersion := make(map[string]string, len(tags))
	versions := make([]string, 0, len(tags))
	for _, t := range tags {
		v := TagVersion(t)
		if _, dup := byVersion[v]; !dup {
			byVersion[v] = t
			versions = append(versions, v)
		}
	}
	best, ok := r.Newest(versions)
	if !ok {
		return "", "", false
	}
	return byVersion[best.Name], best.Name, true
}

// resolveOCI pins src, an oci:// repository, to the manifest digest of
// the tag of the version its constraint selects: an exact version's tag,
// looked up without listing; else the newest of the listed tags in range.
func (s *Source) resolveOCI(ctx context.Context, src v1alpha2.BundleSource) (v1alpha2.BundleSource, error) {
	h := src.HelmRepository
	if s.images == nil {
		return src, fmt.Errorf("OCI Helm repository %s: this Source reads no registry", h.URL)
	}
	repo := OCIRepository(h)
	constraint := h.Version
	if constraint == "" {
		constraint = "*"
	}
	r, err := versionrange.Parse(constraint)
	if err != nil {
		return src, failure.New(v1alpha2.ReasonUnpackFailed, "Helm repository %s: %v", h.URL, err)
	}
	tag, version := OCITag(constraint), constraint
	if !r.Exact() {
		tags, err := s.images.Tags(ctx, ImageSource(h, repo, ""), ImageOptions(h)...)
		if err != nil {
			return src, err
		}
		var ok bool
		if tag, version, ok = NewestTag(tags, r); !ok {
			return src, failure.New(v1alpha2.ReasonSourceNotFound,
				"Helm repository %s: chart %q has no version in %q (%d tags published)", h.URL, h.Chart, constraint, len(tags))
		}
	}
	pinned, err := s.images.ResolveWith(ctx, ImageSource(h, repo+":"+tag, ""), ImageOptions(h)...)
	if err != nil {
		return src, err
	}
	out := *src.DeepCopy()
	out.HelmRepository.ResolvedVersion = version
	out.HelmRepository.ResolvedURL = OCIScheme + repo + ":" + tag
	out.HelmRepository.SHA256 = strings.TrimPrefix(pinned.Image.Digest, "sha256:")
	return out, nil
}

// unpackOCI pulls the chart src pins, by its manifest's digest, into dir.
// The pin must name a tag of the chart's repository.
func (s *Source) unpackOCI(ctx context.Context, src v1alpha2.BundleSource, dir string) error {
	h := src.HelmRepository
	if s.images == nil {
		return fmt.Errorf("OCI Helm repository %s: this Source reads no registry", h.URL)
	}
	ref := strings.TrimPrefix(h.ResolvedURL, OCIScheme)
	repo := OCIRepository(h)
	if !strings.HasPrefix(h.ResolvedURL, OCIScheme) || !strings.HasPrefix(ref, repo+":") || strings.Contains(ref[len(repo)+1:], "/") {
		return failure.New(v1alpha2.ReasonUnpackFailed,
			"Helm repository %s: resolvedURL %s is not a tag of %s%s", h.URL, h.ResolvedURL, OCIScheme, repo)
	}
	return s.images.UnpackChart(ctx, ImageSource(h, ref, "sha256:"+h.SHA256), dir, ImageOptions(h)...)
}
