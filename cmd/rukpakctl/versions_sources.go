package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	repov1 "helm.sh/helm/v4/pkg/repo/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/helmrepo"
	catalogsource "github.com/rukpak/rukpak/internal/source/catalog"
	"github.com/rukpak/rukpak/internal/source/credentials"
	"github.com/rukpak/rukpak/internal/source/git"
	"github.com/rukpak/rukpak/internal/source/helmrepository"
	httpsource "github.com/rukpak/rukpak/internal/source/http"
	"github.com/rukpak/rukpak/internal/source/image"
)

// lister reads what each kind of source publishes, with the source
// types' own readers (credentials, TLS settings and bounds as the
// manager's), the Secrets they name read with the user's client.
type lister struct {
	http     *httpsource.Source
	images   *image.Source
	git      *git.Source
	catalogs *catalogsource.Source
}

// newLister returns a lister reading Secrets through c and keeping what
// it fetches under workDir.
func newLister(c client.Client, workDir string) *lister {
	creds := credentials.NewReader(c, v1alpha2.SystemNamespace)
	images := image.New(creds)
	return &lister{
		http:     httpsource.New(creds),
		images:   images,
		git:      git.New(creds, git.WithWorkDir(workDir)),
		catalogs: catalogsource.New(images, catalogsource.WithWorkDir(workDir)),
	}
}

// versionTable is what versions prints of one source.
type versionTable struct {
	header  string
	columns []string
	rows    [][]string
}

// table lists what src publishes and what each version is to f; nil for
// a source that follows no published versions.
func (l *lister) table(ctx context.Context, src v1alpha2.BundleSource, f followed) (*versionTable, error) {
	var (
		header string
		pub    []published
		err    error
	)
	switch {
	case src.Catalog != nil:
		return l.catalogTable(ctx, src, f)
	case src.HelmRepository != nil:
		h := src.HelmRepository
		header = fmt.Sprintf("chart %s of %s, version %q", h.Chart, h.URL, h.Version)
		f.constraint = h.Version
		pub, err = l.chartVersions(ctx, h)
	case src.Image != nil && src.Image.Versions != "":
		header = fmt.Sprintf("image %s, versions %q", src.Image.Ref, src.Image.Versions)
		f.constraint = src.Image.Versions
		var tags []string
		tags, err = l.images.Tags(ctx, src)
		pub = tagVersions(tags)
	case src.Git != nil && src.Git.Ref.Semver != "":
		header = fmt.Sprintf("git %s, semver %q", src.Git.Repository, src.Git.Ref.Semver)
		f.constraint = src.Git.Ref.Semver
		var tags []string
		tags, err = l.git.Tags(ctx, src)
		pub = tagVersions(tags)
	default:
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	rows, err := versionStates(pub, f)
	if err != nil {
		return nil, err
	}
	t := &versionTable{header: header, columns: []string{"VERSION", "STATE"}}
	for _, r := range rows {
		t.rows = append(t.rows, []string{r.version, strings.Join(r.states, ", ")})
	}
	return t, nil
}

// catalogTable lists the bundles of a catalog source's package in its
// channels, resolved from the installed bundle.
func (l *lister) catalogTable(ctx context.Context, src v1alpha2.BundleSource, f followed) (*versionTable, error) {
	c := src.Catalog
	res, err := l.catalogs.Candidates(ctx, src, f.installed)
	if err != nil {
		return nil, err
	}
	channels := "any channel"
	if len(c.Channels) > 0 {
		channels = "channels " + strings.Join(c.Channels, ", ")
	}
	t := &versionTable{
		header:  fmt.Sprintf("package %s of catalog %s, %s, version %q, upgrade edges %s", c.Package, c.Image, channels, c.Version, upgradeEdges(c)),
		columns: []string{"VERSION", "BUNDLE", "CHANNELS", "STATE"},
	}
	for _, r := range catalogStates(res, f) {
		t.rows = append(t.rows, []string{r.version, r.bundle, strings.Join(r.channels, ","), strings.Join(r.states, ", ")})
	}
	return t, nil
}

// upgradeEdges is c's upgrade edge policy, its default when unset.
func upgradeEdges(c *v1alpha2.CatalogSource) v1alpha2.UpgradeEdges {
	if c.UpgradeEdges == "" {
		return v1alpha2.UpgradeEdgesCatalogProvided
	}
	return c.UpgradeEdges
}

// chartVersions reads the published versions of h's chart: from its
// repository's index, or the tags of an oci:// repository.
func (l *lister) chartVersions(ctx context.Context, h *v1alpha2.HelmRepositorySource) ([]published, error) {
	if helmrepository.IsOCI(h) {
		tags, err := l.images.Tags(ctx, helmrepository.ImageSource(h, helmrepository.OCIRepository(h), ""), helmrepository.ImageOptions(h)...)
		if err != nil {
			return nil, err
		}
		pub := make([]published, 0, len(tags))
		for _, t := range tags {
			pub = append(pub, published{name: helmrepository.TagVersion(t)})
		}
		return pub, nil
	}
	chart, err := l.readChart(ctx, h)
	if err != nil {
		return nil, err
	}
	return chartVersions(chart.Versions), nil
}

// readChart reads h's chart of its repository's index.
func (l *lister) readChart(ctx context.Context, h *v1alpha2.HelmRepositorySource) (*helmrepo.Chart, error) {
	indexURL, err := repov1.ResolveReferenceURL(h.URL, "index.yaml")
	if err != nil {
		return nil, fmt.Errorf("the repository URL %s: %w", h.URL, err)
	}
	resp, done, err := l.http.Get(ctx, &v1alpha2.HTTPSource{URL: indexURL, Auth: h.Auth, CASecret: h.CASecret, InsecureSkipTLSVerify: h.InsecureSkipTLSVerify}, nil)
	if err != nil {
		return nil, fmt.Errorf("fetching the index of %s: %w", h.URL, err)
	}
	defer done()
	chart, err := helmrepo.ReadIndex(ctx, resp.Body, h.Chart, helmrepo.DefaultLimits)
	if err != nil {
		return nil, fmt.Errorf("reading the index of %s: %w", h.URL, err)
	}
	return chart, nil
}

// write prints t as the table of spec.sources[i].
func (t *versionTable) write(w io.Writer, i int) error {
	fmt.Fprintf(w, "spec.sources[%d]: %s\n", i, t.header)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(t.columns, "\t"))
	for _, r := range t.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the table: %w", err)
	}
	return nil
}
