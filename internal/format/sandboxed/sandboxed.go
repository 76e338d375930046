package sandboxed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/format/helm"
	"github.com/rukpak/rukpak/internal/format/kustomize"
	"github.com/rukpak/rukpak/internal/format/plain"
	"github.com/rukpak/rukpak/internal/format/registryv1"
	"github.com/rukpak/rukpak/internal/sandbox"
	"github.com/rukpak/rukpak/internal/values"
	"github.com/rukpak/rukpak/pkg/format"
)

// Names of the built-in formats.
const (
	Plain      = "plain"
	RegistryV1 = "registry+v1"
	Helm       = "helm"
)

// job is the sandbox job that renders a bundle.
const job = "render"

// needLookups is the kind of the sandbox.Need of a render that needs the
// answers of lookups: its data is the []format.LookupQuery of a
// *format.LookupsNeeded.
const needLookups = "lookups"

func init() {
	sandbox.ServeIfChild(job, render)
}

// builtin returns the format called name, with its default limits.
func builtin(name string) (format.Format, error) {
	switch name {
	case Plain:
		return plain.New(), nil
	case RegistryV1:
		return registryv1.New(), nil
	case Helm:
		return helm.New(), nil
	}
	return nil, fmt.Errorf("unknown format %q", name)
}

// request is what the child renders.
type request struct {
	Format string        `json:"format"`
	Dir    string        `json:"dir"`
	Config format.Config `json:"config"`
}

// render is the child's job: the objects of the request's directory.
func render(ctx context.Context, in json.RawMessage) (any, error) {
	var req request
	if err := json.Unmarshal(in, &req); err != nil {
		return nil, fmt.Errorf("decoding the render request: %w", err)
	}
	f, err := builtin(req.Format)
	if err != nil {
		return nil, err
	}
	objs, err := f.Objects(ctx, os.DirFS(req.Dir), req.Config)
	var needed *format.LookupsNeeded
	if errors.As(err, &needed) {
		// Sent to the parent as what the render needs, not as a message.
		need, nerr := sandbox.NewNeed(needLookups, needed.Queries, needed.Error())
		if nerr != nil {
			return nil, nerr
		}
		return nil, need
	}
	return objs, err
}

// lookupsNeeded returns the *format.LookupsNeeded a child's err carries,
// or err itself.
func lookupsNeeded(err error) error {
	var need *sandbox.Need
	if !errors.As(err, &need) || need.Kind != needLookups {
		return err
	}
	var queries []format.LookupQuery
	if derr := need.Decode(&queries); derr != nil {
		return derr
	}
	return &format.LookupsNeeded{Queries: queries}
}

// Format is a built-in format run in a sandboxed child.
type Format struct {
	name   string
	runner *sandbox.Runner
	local  format.Format
	// memo holds the values of the YAML documents of large plain bundles
	// parsed before (see plainDocuments).
	memo *docMemo
	// chunkBytes is about how much YAML one child parses
	// (parseChunkBytes).
	chunkBytes int64
}

var _ format.Format = (*Format)(nil)

// New returns the built-in format called name (Plain, RegistryV1, Helm)
// run by runner; a nil runner renders in this process.
func New(name string, runner *sandbox.Runner) (*Format, error) {
	local, err := builtin(name)
	if err != nil {
		return nil, err
	}
	return &Format{name: name, runner: runner, local: local, memo: newDocMemo(maxMemoBytes), chunkBytes: parseChunkBytes}, nil
}

// Objects renders fsys with cfg in a child and redacts cfg.Redact from its
// errors (see the package documentation). A *format.LookupsNeeded, from
// the child or from this process, is returned as it is, unredacted: its
// queries are what the caller must answer, and are not shown as they are.
func (f *Format) Objects(ctx context.Context, fsys fs.FS, cfg format.Config) ([]*unstructured.Unstructured, error) {
	objs, err := f.objects(ctx, fsys, cfg)
	var needed *format.LookupsNeeded
	if errors.As(err, &needed) {
		return nil, needed
	}
	return objs, values.RedactError(err, cfg.Redact)
}

func (f *Format) objects(ctx context.Context, fsys fs.FS, cfg format.Config) ([]*unstructured.Unstructured, error) {
	if f.runner == nil {
		return f.local.Objects(ctx, fsys, cfg)
	}
	if f.smallPlain(fsys) {
		// Rendered here, but within a slot like any other render.
		release, err := f.runner.Acquire(ctx, "decoding the plain bundle")
		if err != nil {
			return nil, err
		}
		defer release()
		return f.local.Objects(ctx, fsys, cfg)
	}
	dir, cleanup, err := directory(fsys)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	if p, ok := f.local.(*plain.Format); ok && plain.ReadsDocuments(fsys) {
		return p.ObjectsParsedBy(ctx, os.DirFS(dir), cfg, f.plainDocuments(dir))
	}
	var out []json.RawMessage
	err = f.runner.Run(ctx, sandbox.Call{
		Job:         job,
		What:        "rendering the " + f.name + " bundle",
		In:          request{Format: f.name, Dir: dir, Config: cfg},
		Out:         &out,
		CrashReason: v1alpha2.ReasonRenderFailed,
	})
	if err != nil {
		return nil, lookupsNeeded(err)
	}
	objs := make([]*unstructured.Unstructured, len(out))
	for i, raw := range out {
		// As the formats do: integers are int64, other numbers float64.
		var obj map[string]any
		if err := utiljson.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("decoding rendered object %d: %w", i, err)
		}
		objs[i] = &unstructured.Unstructured{Object: obj}
	}
	return objs, nil
}

// directory returns the directory of fsys on disk: that of an os.DirFS
// (how the content store and rukpakctl open content), else a temporary
// copy, removed by cleanup.
func directory(fsys fs.FS) (dir string, cleanup func(), err error) {
	if d, ok := dirOf(fsys); ok {
		abs, err := filepath.Abs(d)
		if err != nil {
			return "", nil, fmt.Errorf("content directory %s: %w", d, err)
		}
		return abs, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", "rukpak-render-")
	if err != nil {
		return "", nil, fmt.Errorf("copying content to render it: %w", err)
	}
	cleanup = func() { _ = os.RemoveAll(tmp) }
	if err := os.CopyFS(tmp, fsys); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("copying content to render it: %w", err)
	}
	return tmp, cleanup, nil
}

// dirOf returns the directory of an os.DirFS, whose type is a string
// holding it.
func dirOf(fsys fs.FS) (string, bool) {
	v := reflect.ValueOf(fsys)
	if t := v.Type(); t.PkgPath() == "os" && t.Name() == "dirFS" && v.Kind() == reflect.String {
		return v.String(), true
	}
	return "", false
}

// maxInProcessPlain is the size up to which a plain bundle without a
// kustomization is decoded in the manager's own process: decoding YAML
// costs memory in proportion to its size (aliases are bounded by the YAML
// decoder), so a small bundle cannot blow up, and starting a child (about
// 25 ms) would cost more than decoding it. Larger ones, and every
// kustomization, registry+v1 bundle and chart, go to a child.
const maxInProcessPlain = 1 << 20

// smallPlain reports whether fsys is a plain bundle without a
// kustomization whose files weigh at most maxInProcessPlain in all.
func (f *Format) smallPlain(fsys fs.FS) bool {
	if f.name != Plain {
		return false
	}
	if k, err := kustomize.Find(fsys); err != nil || k != "" {
		return false
	}
	var total int64
	err := fs.WalkDir(fsys, ".", func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			total += info.Size()
			if total > maxInProcessPlain {
				return fs.SkipAll
			}
		}
		return nil
	})
	return err == nil && total <= maxInProcessPlain
}
