package plain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/format/kustomize"
	"github.com/rukpak/rukpak/internal/limits"
	"github.com/rukpak/rukpak/pkg/failure"
	"github.com/rukpak/rukpak/pkg/format"
)

// Default limits of a bundle's content.
const (
	// DefaultMaxFileBytes is the largest manifest file read: 16 MiB.
	DefaultMaxFileBytes int64 = 16 << 20
	// DefaultMaxTotalBytes is the most all manifest files of a bundle may
	// hold together: 256 MiB.
	DefaultMaxTotalBytes int64 = 256 << 20
	// DefaultMaxObjects is the most objects a bundle may have.
	DefaultMaxObjects = 50_000
	// DefaultMaxFiles is the most files a kustomize bundle may have.
	DefaultMaxFiles = 10_000
)

// manifestsDir is the directory of the tree that holds the manifests.
const manifestsDir = "manifests"

// Limits bound what reading a bundle's untrusted content may cost. A zero
// field means its default.
type Limits struct {
	// MaxFileBytes is the largest manifest file read (any file of a
	// kustomize bundle), in bytes.
	MaxFileBytes int64
	// MaxTotalBytes is the most all manifest files of a bundle may hold
	// together, in bytes. Ignored files do not count; in a kustomize
	// bundle every file counts, and the build may not read more, counting
	// a base once per use.
	MaxTotalBytes int64
	// MaxObjects is the most objects a bundle may have, after Lists are
	// expanded.
	MaxObjects int
	// MaxFiles is the most files a kustomize bundle may have; it also
	// bounds the files its build reads, counting a base once per use.
	// Bundles read from manifests/ ignore it.
	MaxFiles int
}

// DefaultLimits returns the limits New uses.
func DefaultLimits() Limits {
	return Limits{
		MaxFileBytes:  DefaultMaxFileBytes,
		MaxTotalBytes: DefaultMaxTotalBytes,
		MaxObjects:    DefaultMaxObjects,
		MaxFiles:      DefaultMaxFiles,
	}
}

// withDefaults returns l with every zero field set to its default.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	l.MaxFileBytes = limits.PositiveOr(l.MaxFileBytes, d.MaxFileBytes)
	l.MaxTotalBytes = limits.PositiveOr(l.MaxTotalBytes, d.MaxTotalBytes)
	l.MaxObjects = limits.PositiveOr(l.MaxObjects, d.MaxObjects)
	l.MaxFiles = limits.PositiveOr(l.MaxFiles, d.MaxFiles)
	return l
}

// Format reads plain+v0 bundles. It holds no state between calls and is
// safe for concurrent use as long as Limits is not changed meanwhile.
type Format struct {
	// Limits bound the content read; New sets DefaultLimits.
	Limits Limits
}

var _ format.Format = (*Format)(nil)

// New returns a plain+v0 Format with the default limits.
func New() *Format {
	return &Format{Limits: DefaultLimits()}
}

// Objects returns the objects of fsys: built by kustomize if the root has
// a kustomization file, else those of the manifests/ directory in file
// order, then document order. cfg.InstallNamespace is used only to find
// duplicates (an object without a namespace lands there); objects are
// returned without change.
func (f *Format) Objects(ctx context.Context, fsys fs.FS, cfg format.Config) ([]*unstructured.Unstructured, error) {
	kustomization, err := kustomize.Find(fsys)
	if err != nil {
		return nil, err
	}
	if kustomization != "" {
		return f.kustomizeObjects(ctx, fsys, kustomization, cfg)
	}
	c := newCollector(f.Limits.withDefaults(), cfg.InstallNamespace)
	if err := c.eachManifest(ctx, fsys, c.decode); err != nil {
		return nil, err
	}
	return c.result()
}

// eachManifest calls file with the path and bytes of each manifest file of
// fsys's manifests/ directory, in lexical order, read within the limits.
func (c *collector) eachManifest(ctx context.Context, fsys fs.FS, file func(p string, data []byte) error) error {
	if err := checkManifestsDir(fsys); err != nil {
		return err
	}
	return fs.WalkDir(fsys, manifestsDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("reading %s: %w", p, err)
		}
		if d.IsDir() || !isManifest(p) {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("reading bundle manifests: %w", err)
		}
		data, err := c.read(fsys, p, d)
		if err != nil {
			return err
		}
		return file(p, data)
	})
}

// result returns the objects collected, or fails for a bundle without any.
func (c *collector) result() ([]*unstructured.Unstructured, error) {
	if len(c.objects) == 0 {
		return nil, failure.New(v1alpha2.ReasonInvalidContent, "bundle has no objects in %s/", manifestsDir)
	}
	return c.objects, nil
}

// checkManifestsDir fails unless fsys has a manifests/ directory.
func checkManifestsDir(fsys fs.FS) error {
	info, err := fs.Stat(fsys, manifestsDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return failure.New(v1alpha2.ReasonInvalidContent, "bundle has no %s/ directory", manifestsDir)
	case err != nil:
		return fmt.Errorf("reading %s/: %w", manifestsDir, err)
	case !info.IsDir():
		return failure.New(v1alpha2.ReasonInvalidContent, "bundle has no %s/ directory: %s is a file", manifestsDir, manifestsDir)
	}
	return nil
}

// isManifest reports whether the file at p holds objects.
func isManifest(p string) bool {
	switch path.Ext(p) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// decode adds the objects of the manifest file p holding data to c.
func (c *collector) decode(p string, data []byte) error {
	if path.Ext(p) == ".json" {
		return eachJSONDocument(p, data, c.add)
	}
	docs, err := c.split(p, data)
	if err != nil {
		return err
	}
	return eachYAMLDocument(data, docs, c.add)
}

// split returns the non-empty documents of the YAML file p holding data,
// counting them towards the bundle's limit: at most MaxObjects documents,
// as a document that is no object (null, an empty List) is rare, and so
// that splitting a bundle of countless tiny documents costs no more than
// its objects would.
func (c *collector) split(p string, data []byte) ([]yamlDoc, error) {
	docs := yamlDocuments(p, data)
	c.documents += len(docs)
	if c.documents > c.limits.MaxObjects {
		return nil, failure.New(v1alpha2.ReasonInvalidContent,
			"%s: bundle has more than %d YAML documents, the limit per bundle", p, c.limits.MaxObjects)
	}
	return docs, nil
}

// read reads the manifest file at p within the limits, counting it
// towards the bundle's total.
func (c *collector) read(fsys fs.FS, p string, d fs.DirEntry) ([]byte, error) {
	// A symlink could point out of the bundle; devices and pipes may never end.
	if !d.Type().IsRegular() {
		return nil, failure.New(v1alpha2.ReasonInvalidContent, "%s: not a regular file", p)
	}
	info, err := d.Info()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	if err := c.checkSize(p, info.Size()); err != nil {
		return nil, err
	}
	file, err := fsys.Open(p)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	defer file.Close()
	// Do not trust the size the file system reported: read one byte more
	// than allowed to tell a file that grew from one that fits.
	allowed := min(c.limits.MaxFileBytes, c.limits.MaxTotalBytes-c.total)
	data, err := io.ReadAll(io.LimitReader(file, allowed+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	if err := c.checkSize(p, int64(len(data))); err != nil {
		return nil, err
	}
	c.total += int64(len(data))
	return data, nil
}

// checkSize refuses a file of size bytes at p that is over a limit.
func (c *collector) checkSize(p string, size int64) error {
	if size > c.limits.MaxFileBytes {
		return failure.New(v1alpha2.ReasonInvalidContent,
			"%s: file is over the limit of %d bytes per manifest file", p, c.limits.MaxFileBytes)
	}
	if c.total+size > c.limits.MaxTotalBytes {
		return failure.New(v1alpha2.ReasonInvalidContent,
			"%s: file takes the bundle's manifests over the limit of %d bytes in total", p, c.limits.MaxTotalBytes)
	}
	return nil
}
