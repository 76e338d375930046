// Package builtin assembles rukpak's source types into one registry, so
// that the manager and the CLI (rukpakctl preview) fetch content the same
// way.
package builtin

import (
	"path/filepath"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/metrics"
	"github.com/rukpak/rukpak/internal/source"
	catalogsource "github.com/rukpak/rukpak/internal/source/catalog"
	"github.com/rukpak/rukpak/internal/source/configmaps"
	"github.com/rukpak/rukpak/internal/source/credentials"
	"github.com/rukpak/rukpak/internal/source/git"
	"github.com/rukpak/rukpak/internal/source/helmrepository"
	httpsource "github.com/rukpak/rukpak/internal/source/http"
	"github.com/rukpak/rukpak/internal/source/image"
	"github.com/rukpak/rukpak/internal/source/resolvecache"
	uploadsource "github.com/rukpak/rukpak/internal/source/upload"
	"github.com/rukpak/rukpak/internal/upload"
)

// settings are what Options change.
type settings struct {
	deadline time.Duration
	workDir  string
}

// Option configures the registry.
type Option func(*settings)

// WithDeadline bounds resolving and unpacking one source (see
// source.Registry.WithDeadline); d <= 0 keeps source.DefaultDeadline.
func WithDeadline(d time.Duration) Option { return func(s *settings) { s.deadline = d } }

// WithWorkDir is where sources make files that are not part of an unpack
// (a git source's repository to peel a tag, Helm repository indexes,
// catalog images while they are read); ""
// keeps the system's temporary directory.
func WithWorkDir(dir string) Option { return func(s *settings) { s.workDir = dir } }

// Registry returns every source type, reading the Secrets and ConfigMaps
// sources name from namespace through c, and uploads through c (writes)
// and live (reads that must not lag); it also returns the upload store,
// whose garbage the manager collects. Every source has a deadline, and
// the resolutions of floating sources are shared among the
// BundleDeployments naming the same source with the same credentials
// (package resolvecache).
func Registry(c client.Client, live client.Reader, namespace string, opts ...Option) (source.Registry, *upload.Store) {
	var set settings
	for _, o := range opts {
		o(&set)
	}
	var gitOpts []git.Option
	if set.workDir != "" {
		gitOpts = append(gitOpts, git.WithWorkDir(set.workDir))
	}
	var helmOpts []helmrepository.Option
	if set.workDir != "" {
		helmOpts = append(helmOpts, helmrepository.WithWorkDir(filepath.Join(set.workDir, "helm-index")))
	}
	var catalogOpts []catalogsource.Option
	if set.workDir != "" {
		catalogOpts = append(catalogOpts, catalogsource.WithWorkDir(set.workDir))
	}
	creds := credentials.NewReader(c, namespace)
	uploads := upload.NewStore(c, live, namespace)
	http := httpsource.New(creds)
	images := image.New(creds)
	reg := source.Registry{
		v1alpha2.SourceTypeConfigMaps:     configmaps.New(c, namespace),
		v1alpha2.SourceTypeImage:          images,
		v1alpha2.SourceTypeCatalog:        catalogsource.New(images, catalogOpts...),
		v1alpha2.SourceTypeGit:            git.New(creds, gitOpts...),
		v1alpha2.SourceTypeHTTP:           http,
		v1alpha2.SourceTypeHelmRepository: helmrepository.New(creds, http, images, helmOpts...),
		v1alpha2.SourceTypeUpload:         uploadsource.New(uploads),
	}
	shared := resolvecache.New(creds, resolvecache.WithObserver(func(t v1alpha2.SourceType, o resolvecache.Outcome) {
		metrics.SourceResolutions.WithLabelValues(string(t), string(o)).Inc()
	}))
	return shared.Wrap(reg).WithDeadline(set.deadline), uploads
}
