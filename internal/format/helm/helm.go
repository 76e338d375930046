package helm

import (
	"context"
	"io/fs"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/limits"
	"github.com/rukpak/rukpak/internal/sandbox"
	"github.com/rukpak/rukpak/pkg/failure"
	"github.com/rukpak/rukpak/pkg/format"
)

// Default limits of a chart's content and of what it renders to.
const (
	// DefaultMaxFiles is the most files a chart may have, counting the
	// entries of packaged charts (the chart itself or subcharts in charts/).
	DefaultMaxFiles = 10_000
	// DefaultMaxFileBytes is the largest file read: 16 MiB.
	DefaultMaxFileBytes int64 = 16 << 20
	// DefaultMaxTotalBytes is the most all files of a chart may hold
	// together, packaged charts counted both packed and unpacked: 64 MiB.
	DefaultMaxTotalBytes int64 = 64 << 20
	// DefaultMaxRenderedBytes is the most the rendered templates may hold
	// together: 128 MiB.
	DefaultMaxRenderedBytes int64 = 128 << 20
	// DefaultMaxObjects is the most objects a chart may render to.
	DefaultMaxObjects = 50_000
)

// Limits bound what reading and rendering a chart's untrusted content may
// cost. A zero field means its default.
//
// Template execution itself is not bounded here: a template is a program,
// and a chart may loop for long or build large strings before the rendered
// output is measured. The manager renders in a child process with memory
// and time limits (package sandboxed), which bound that.
type Limits struct {
	// MaxFiles is the most files of the chart, including entries of
	// packaged charts. Files .helmignore excludes do not count.
	MaxFiles int
	// MaxFileBytes is the largest file read, in bytes.
	MaxFileBytes int64
	// MaxTotalBytes is the most bytes read for the chart in total.
	MaxTotalBytes int64
	// MaxRenderedBytes is the most bytes the rendered templates may hold.
	MaxRenderedBytes int64
	// MaxObjects is the most objects, CRDs included, a chart may render to.
	MaxObjects int
}

// DefaultLimits returns the limits New uses.
func DefaultLimits() Limits {
	return Limits{
		MaxFiles:         DefaultMaxFiles,
		MaxFileBytes:     DefaultMaxFileBytes,
		MaxTotalBytes:    DefaultMaxTotalBytes,
		MaxRenderedBytes: DefaultMaxRenderedBytes,
		MaxObjects:       DefaultMaxObjects,
	}
}

// withDefaults returns l with every zero field set to its default.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	l.MaxFiles = limits.PositiveOr(l.MaxFiles, d.MaxFiles)
	l.MaxFileBytes = limits.PositiveOr(l.MaxFileBytes, d.MaxFileBytes)
	l.MaxTotalBytes = limits.PositiveOr(l.MaxTotalBytes, d.MaxTotalBytes)
	l.MaxRenderedBytes = limits.PositiveOr(l.MaxRenderedBytes, d.MaxRenderedBytes)
	l.MaxObjects = limits.PositiveOr(l.MaxObjects, d.MaxObjects)
	return l
}

// Format renders Helm charts. It holds no state between calls and is safe
// for concurrent use as long as Limits is not changed meanwhile.
type Format struct {
	// Limits bound the content read and rendered; New sets DefaultLimits.
	Limits Limits
}

var _ format.Format = (*Format)(nil)

// New returns a Helm Format with the default limits.
func New() *Format {
	return &Format{Limits: DefaultLimits()}
}

// Objects finds the chart in fsys, merges cfg.Values over its defaults,
// renders it for the release cfg.ReleaseName in cfg.InstallNamespace on a
// cluster with cfg.Capabilities, and returns the objects to install: the
// CRDs of crds/ directories first, then the rendered objects in Helm's
// install order, then the install and upgrade hooks by weight. See the
// package documentation for what is and is not supported.
func (f *Format) Objects(ctx context.Context, fsys fs.FS, cfg format.Config) (objs []*unstructured.Unstructured, err error) {
	// The Helm SDK processes untrusted content; whatever panic it lets
	// through fails the revision rather than the manager.
	defer func() {
		if r := recover(); r != nil {
			objs, err = nil, failure.New(v1alpha2.ReasonRenderFailed, "processing the chart failed: %v", r)
		}
	}()
	limits := f.Limits.withDefaults()
	loc, err := findChart(fsys)
	if err != nil {
		return nil, err
	}
	ch, err := loadChart(ctx, fsys, loc, limits)
	if err != nil {
		return nil, err
	}
	// Run in a sandbox child, a chart that blows up is named.
	sandbox.Describe("rendering chart " + ch.Name())
	caps, err := capabilities(cfg.Capabilities)
	if err != nil {
		return nil, err
	}
	if err := checkKubeVersion(ch, caps); err != nil {
		return nil, err
	}
	vals, err := renderValues(ch, cfg, caps)
	if err != nil {
		return nil, err
	}
	files, err := render(ctx, ch, vals, limits, newLookups(cfg.Lookups))
	if err != nil {
		return nil, err
	}
	return collect(ch, files, cfg.InstallNamespace, limits)
}
