package catalog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/archive"
	"github.com/rukpak/rukpak/internal/catalog"
	"github.com/rukpak/rukpak/internal/source"
	"github.com/rukpak/rukpak/internal/source/image"
	"github.com/rukpak/rukpak/pkg/failure"
)

// ConfigsLabel is the label of a catalog image naming the directory of
// its File-Based Catalog; DefaultConfigsDir is the directory when the
// image has no such label.
const (
	ConfigsLabel      = "operators.operatorframework.io.index.configs.v1"
	DefaultConfigsDir = "/configs"
)

// DefaultPullLimits bound what is read of a catalog image: its layers'
// compressed bytes, and what they write (the catalog, and the opm binary
// and base image most catalog images carry).
var DefaultPullLimits = image.PullLimits{
	Archive:       archive.Limits{MaxBytes: 1 << 30, MaxFiles: 200_000},
	MaxLayerBytes: 512 << 20,
}

// Source reads bundles that operator catalogs select.
type Source struct {
	images  *image.Source
	cache   *cache
	lim     catalog.Limits
	pull    image.PullLimits
	workDir string
}

var (
	_ source.Source    = (*Source)(nil)
	_ source.Floating  = (*Source)(nil)
	_ source.Successor = (*Source)(nil)
	_ source.Reporter  = (*Source)(nil)
)

// Option configures a Source.
type Option func(*Source)

// WithLimits bounds what is parsed of a catalog; the default is
// catalog.DefaultLimits.
func WithLimits(l catalog.Limits) Option { return func(s *Source) { s.lim = l } }

// WithPullLimits bounds what is read of a catalog image; the default is
// DefaultPullLimits.
func WithPullLimits(l image.PullLimits) Option { return func(s *Source) { s.pull = l } }

// WithCacheSize is how many catalog digests are kept parsed; the default
// is DefaultCacheSize.
func WithCacheSize(n int) Option { return func(s *Source) { s.cache = newCache(max(n, 1)) } }

// WithWorkDir is where catalog images are unpacked while they are read;
// "" keeps the system's temporary directory.
func WithWorkDir(dir string) Option { return func(s *Source) { s.workDir = dir } }

// New returns a Source pulling catalog and bundle images with images.
func New(images *image.Source, opts ...Option) *Source {
	s := &Source{images: images, cache: newCache(DefaultCacheSize), lim: catalog.DefaultLimits, pull: DefaultPullLimits}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Floating reports whether src is not pinned to a bundle image yet.
func (s *Source) Floating(src v1alpha2.BundleSource) bool {
	return src.Catalog != nil && src.Catalog.ResolvedImage == ""
}

// Resolve pins src to the bundle its catalog selects with nothing
// installed; a pinned src is returned as it is.
func (s *Source) Resolve(ctx context.Context, src v1alpha2.BundleSource) (v1alpha2.BundleSource, error) {
	return s.resolve(ctx, src, "")
}

// ResolveFrom pins src to the bundle its catalog selects from the bundle
// installed, the resolvedBundle of installed when it is of the same
// package; a pinned src is returned as it is.
func (s *Source) ResolveFrom(ctx context.Context, src v1alpha2.BundleSource, installed *v1alpha2.BundleSource) (v1alpha2.BundleSource, error) {
	from := ""
	if installed != nil && installed.Catalog != nil && src.Catalog != nil && installed.Catalog.Package == src.Catalog.Package {
		from = installed.Catalog.ResolvedBundle
	}
	return s.resolve(ctx, src, from)
}

// resolve pins src to the bundle selected from the installed bundle
// (by name; "" for none).
func (s *Source) resolve(ctx context.Context, src v1alpha2.BundleSource, installed string) (v1alpha2.BundleSource, error) {
	c, err := member(src)
	if err != nil {
		return src, err
	}
	if c.ResolvedImage != "" {
		return src, nil
	}
	pinnedCatalog, err := s.images.Resolve(ctx, imageSource(c, c.Image))
	if err != nil {
		return src, fmt.Errorf("catalog image: %w", err)
	}
	digest := pinnedCatalog.Image.Digest
	cat, err := s.cache.get(ctx, cacheKey(c, digest), func() (*catalog.Catalog, error) { return s.load(ctx, pinnedCatalog) })
	if err != nil {
		return src, err
	}
	b, err := s.selectBundle(cat, c, installed)
	if err != nil {
		return src, err
	}
	bundleRef, err := s.pinBundle(ctx, c, b)
	if err != nil {
		return src, err
	}
	out := *src.DeepCopy()
	out.Catalog.ResolvedBundle, out.Catalog.ResolvedVersion = b.Name, b.Version.Original()
	out.Catalog.ResolvedImage, out.Catalog.CatalogDigest = bundleRef, digest
	return out, nil
}

// PinnedVersion is the version of the bundle pinned selected, once pinned
// names its image (source.Reporter: not Versioned, for the catalog's
// selection may go to an older bundle by itself).
func (s *Source) PinnedVersion(pinned v1alpha2.BundleSource) string {
	c := pinned.Catalog
	if c == nil || c.ResolvedImage == "" {
		return ""
	}
	return c.ResolvedVersion
}

// Candidates reads the catalog src names now (its image's tag looked up
// again, whatever src pins) and returns what it makes of every bundle of
// src's package from the installed bundle (by name; "" for none): the
// one it selects and why each other is passed over. It is for listing
// what a source follows (rukpakctl versions); it pins nothing.
func (s *Source) Candidates(ctx context.Context, src v1alpha2.BundleSource, installed string) (catalog.Result, error) {
	c, err := member(src)
	if err != nil {
		return catalog.Result{}, err
	}
	pinnedCatalog, err := s.images.Resolve(ctx, imageSource(c, c.Image))
	if err != nil {
		return catalog.Result{}, fmt.Errorf("catalog image: %w", err)
	}
	cat, err := s.cache.get(ctx, cacheKey(c, pinnedCatalog.Image.Digest), func() (*catalog.Catalog, error) { return s.load(ctx, pinnedCatalog) })
	if err != nil {
		return catalog.Result{}, err
	}
	res, err := cat.Resolve(query(c, installed))
	if err != nil {
		return catalog.Result{}, failure.New(v1alpha2.ReasonSourceNotFound, "catalog %s: %v", c.Image, err)
	}
	return res, nil
}

// query is the catalog query of c from the installed bundle.
func query(c *v1alpha2.CatalogSource, installed string) catalog.Query {
	return catalog.Query{
		Package:   c.Package,
		Channels:  c.Channels,
		Range:     c.Version,
		Installed: installed,
		AnyEdge:   c.UpgradeEdges == v1alpha2.UpgradeEdgesSelfCertified,
	}
}

// selectBundle returns the bundle of c's package cat selects from the
// installed bundle: a terminal failure when there is none, or when it
// declares dependencies.
func (s *Source) selectBundle(cat *catalog.Catalog, c *v1alpha2.CatalogSource, installed string) (*catalog.Bundle, error) {
	res, err := cat.Resolve(query(c, installed))
	if err != nil {
		return nil, failure.New(v1alpha2.ReasonSourceNotFound, "catalog %s: %v", c.Image, err)
	}
	if res.Selected == nil {
		return nil, failure.New(v1alpha2.ReasonSourceNotFound, "catalog %s: no bundle of package %q qualifies: %s",
			c.Image, c.Package, whyNot(res.Candidates))
	}
	if b := res.Selected; len(b.Requires) > 0 {
		return nil, failure.New(v1alpha2.ReasonDependenciesUnsupported,
			"catalog %s: bundle %s of package %q declares dependencies (%s), which rukpak does not install",
			c.Image, b.Name, c.Package, strings.Join(b.Requires, ", "))
	}
	return res.Selected, nil
}

// maxWhyNot is how many passed-over bundles a message names.
const maxWhyNot = 5

// whyNot says why the newest candidates were passed over.
func whyNot(cands []catalog.Candidate) string {
	if len(cands) == 0 {
		return "the package has no bundles"
	}
	parts := make([]string, 0, maxWhyNot+1)
	for i, cand := range cands {
		if i == maxWhyNot {
			parts = append(parts, fmt.Sprintf("and %d more", len(cands)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%s): %s", cand.Bundle.Name, cand.Bundle.Version.Original(), cand.Why))
	}
	return strings.Join(parts, "; ")
}

// pinBundle returns the image of bundle b by digest, looked up in its
// registry with c's credentials unless the catalog names it by digest.
func (s *Source) pinBundle(ctx context.Context, c *v1alpha2.CatalogSource, b *catalog.Bundle) (string, error) {
	if b.Image == "" {
		return "", failure.New(v1alpha2.ReasonUnpackFailed, "catalog %s: bundle %s has no image", c.Image, b.Name)
	}
	ref, err := name.ParseReference(b.Image, nameOptions(c)...)
	if err != nil {
		return "", failure.New(v1alpha2.ReasonUnpackFailed, "catalog %s: bundle %s has image %q, which cannot be parsed: %v", c.Image, b.Name, b.Image, err)
	}
	pinned, err := s.images.Resolve(ctx, imageSource(c, b.Image))
	if err != nil {
		return "", fmt.Errorf("bundle image of %s: %w", b.Name, err)
	}
	return ref.Context().Digest(pinned.Image.Digest).String(), nil
}

// Unpack unpacks the pinned bundle image of src into dir with the image
// source.
func (s *Source) Unpack(ctx context.Context, src v1alpha2.BundleSource, dir string) error {
	c, err := member(src)
	if err != nil {
		return err
	}
	if c.ResolvedImage == "" {
		return fmt.Errorf("package %s of catalog %s is not pinned: the source must be resolved before it is unpacked", c.Package, c.Image)
	}
	if err := s.images.Unpack(ctx, imageSource(c, c.ResolvedImage), dir); err != nil {
		return fmt.Errorf("bundle %s: %w", c.ResolvedBundle, err)
	}
	return nil
}

// load pulls the pinned catalog image and parses its configs directory.
func (s *Source) load(ctx context.Context, pinned v1alpha2.BundleSource) (*catalog.Catalog, error) {
	dir, err := os.MkdirTemp(s.workDir, "catalog-")
	if err != nil {
		return nil, fmt.Errorf("making a directory for catalog %s: %w", pinned.Image.Ref, err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	labels, err := s.images.Pull(ctx, pinned, dir, s.pull)
	if err != nil {
		return nil, fmt.Errorf("catalog image: %w", err)
	}
	configs := DefaultConfigsDir
	if l := labels[ConfigsLabel]; l != "" {
		configs = l
	}
	root, err := os.OpenRoot(filepath.Join(dir, filepath.Clean("/"+configs)))
	if err != nil {
		return nil, failure.New(v1alpha2.ReasonUnpackFailed, "catalog image %s@%s has no configs directory %s: %v",
			pinned.Image.Ref, pinned.Image.Digest, configs, err)
	}
	defer func() { _ = root.Close() }()
	cat, err := catalog.Parse(root.FS(), s.lim)
	switch {
	case errors.Is(err, catalog.ErrTooLarge):
		return nil, failure.New(v1alpha2.ReasonResourceLimit, "catalog image %s@%s: %v", pinned.Image.Ref, pinned.Image.Digest, err)
	case err != nil:
		return nil, failure.New(v1alpha2.ReasonUnpackFailed, "catalog image %s@%s: %v", pinned.Image.Ref, pinned.Image.Digest, err)
	}
	return cat, nil
}

// cacheKey is the key of the catalog of digest read with c's credentials:
// a catalog image named by digest is pinned without a request, so the
// parse one pull secret read must not answer a source naming another or
// none (which the registry could refuse). Sources with the same
// credentials share it.
func cacheKey(c *v1alpha2.CatalogSource, digest string) string {
	name := func(r *v1alpha2.LocalObjectReference) string {
		if r == nil {
			return ""
		}
		return r.Name
	}
	return fmt.Sprintf("%s pull=%s ca=%s insecure=%t", digest, name(c.PullSecret), name(c.CASecret), c.InsecureSkipTLSVerify)
}

// imageSource is the image source of ref with c's credentials and TLS
// settings.
func imageSource(c *v1alpha2.CatalogSource, ref string) v1alpha2.BundleSource {
	return v1alpha2.BundleSource{Type: v1alpha2.SourceTypeImage, Image: &v1alpha2.ImageSource{
		Ref: ref, PullSecret: c.PullSecret, CASecret: c.CASecret, InsecureSkipTLSVerify: c.InsecureSkipTLSVerify,
	}}
}

// nameOptions lets a source that skips TLS verification name plain-HTTP
// registries, as the image source does.
func nameOptions(c *v1alpha2.CatalogSource) []name.Option {
	if c.InsecureSkipTLSVerify {
		return []name.Option{name.Insecure}
	}
	return nil
}

func member(src v1alpha2.BundleSource) (*v1alpha2.CatalogSource, error) {
	if src.Catalog == nil {
		return nil, failure.New(v1alpha2.ReasonUnpackFailed, "source of type %s has no catalog member", src.Type)
	}
	return src.Catalog, nil
}
