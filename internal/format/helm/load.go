package helm

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/ignore"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// utf8BOM is stripped from the start of files, as Helm's loaders do.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// loadChart reads the chart at loc within limits and checks that it can
// be installed: a v1 or v2 application chart whose declared dependencies
// are all in charts/. Subcharts are sorted by name and version so that
// everything derived from their order is the same on every render.
func loadChart(ctx context.Context, fsys fs.FS, loc location, limits Limits) (ch *chart.Chart, err error) {
	b := &budget{limits: limits}
	var files []*archive.BufferedFile
	var data []byte
	if loc.archive != "" {
		data, err = b.readPath(fsys, loc.archive)
		if err == nil {
			err = b.scanArchive(loc.archive, data, 0)
		}
	} else {
		files, err = b.readDir(ctx, fsys, loc.dir)
	}
	if err != nil {
		return nil, err
	}
	// Helm's loader parses untrusted YAML and archives: a panic there is
	// the content's fault.
	defer func() {
		if r := recover(); r != nil {
			ch, err = nil, failure.New(v1alpha2.ReasonInvalidContent, "loading the chart in %s failed: %v", loc, r)
		}
	}()
	if loc.archive != "" {
		ch, err = loader.LoadArchive(bytes.NewReader(data))
	} else {
		ch, err = loader.LoadFiles(files)
	}
	if err != nil {
		return nil, failure.New(v1alpha2.ReasonInvalidContent, "invalid chart in %s: %v", loc, err)
	}
	if err := checkChart(ch, loc); err != nil {
		return nil, err
	}
	sortDependencies(ch)
	return ch, nil
}

// checkChart refuses a chart Helm would not install: an unknown
// apiVersion, a library chart, or a dependency of Chart.yaml (of the chart
// or of a subchart) that is not in charts/.
func checkChart(ch *chart.Chart, loc location) error {
	switch v := ch.Metadata.APIVersion; v {
	case chart.APIVersionV1, chart.APIVersionV2:
	default:
		return failure.New(v1alpha2.ReasonInvalidContent,
			"invalid chart in %s: %s: apiVersion %q is not supported, want %s or %s",
			loc, chartFile, v, chart.APIVersionV2, chart.APIVersionV1)
	}
	if ch.Metadata.Type == "library" {
		return failure.New(v1alpha2.ReasonInvalidContent,
			"chart %s in %s is a library chart, which cannot be installed", ch.Name(), loc)
	}
	return checkDependencies(ch)
}

// checkDependencies refuses dependencies declared in the chart's
// Chart.yaml that are not in its charts/, matched by name, as helm install
// does. Like helm install it checks the chart being installed only: a
// subchart packaged without its own dependencies renders without them
// (the usual case is one whose dependencies are disabled).
func checkDependencies(ch *chart.Chart) error {
	present := map[string]bool{}
	for _, d := range ch.Dependencies() {
		present[d.Name()] = true
	}
	var missing []string
	for _, d := range ch.Metadata.Dependencies {
		if d != nil && !present[d.Name] {
			missing = append(missing, d.Name)
		}
	}
	if len(missing) > 0 {
		return failure.New(v1alpha2.ReasonInvalidContent,
			"chart %s: dependencies declared in %s are missing from %s/charts/: %s (run helm dependency build before packaging)",
			ch.ChartFullPath(), chartFile, ch.ChartFullPath(), strings.Join(missing, ", "))
	}
	return nil
}

// sortDependencies orders the subcharts of ch, recursively, by name and
// version: Helm's loader adds them in map order.
func sortDependencies(ch *chart.Chart) {
	deps := append([]*chart.Chart(nil), ch.Dependencies()...)
	sort.SliceStable(deps, func(i, j int) bool {
		if deps[i].Name() != deps[j].Name() {
			return deps[i].Name() < deps[j].Name()
		}
		return deps[i].Metadata.Version < deps[j].Metadata.Version
	})
	ch.SetDependencies(deps...)
	for _, d := range deps {
		sortDependencies(d)
	}
}

// readDir reads the chart directory dir of fsys into Helm's in-memory
// form, skipping what its .helmignore excludes (and, as Helm does, dot
// files in templates/). Names are relative to dir. Subchart archives in
// charts/ directories are scanned against the limits too, since Helm's
// loader unpacks them in memory.
func (b *budget) readDir(ctx context.Context, fsys fs.FS, dir string) ([]*archive.BufferedFile, error) {
	rules, err := b.ignoreRules(fsys, dir)
	if err != nil {
		return nil, err
	}
	var files []*archive.BufferedFile
	err = fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("reading %s: %w", p, err)
		}
		if p == dir {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("reading the chart: %w", err)
		}
		rel := p
		if dir != "." {
			rel = strings.TrimPrefix(p, dir+"/")
		}
		info, err := d.Info()
		if err != nil {
			return fmt.Errorf("reading %s: %w", p, err)
		}
		if rules.Ignore(rel, info) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		data, err := b.readFile(fsys, p, info)
		if err != nil {
			return err
		}
		data = bytes.TrimPrefix(data, utf8BOM)
		if isSubchartArchive(rel) {
			if err := b.scanArchive(p, data, 1); err != nil {
				return err
			}
		}
		files = append(files, &archive.BufferedFile{Name: rel, Data: data})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return files, nil
}

// ignoreRules returns the rules of dir's .helmignore, or none, with Helm's
// defaults added.
func (b *budget) ignoreRules(fsys fs.FS, dir string) (*ignore.Rules, error) {
	p := path.Join(dir, ignore.HelmIgnore)
	rules := ignore.Empty()
	if ok, err := exists(fsys, p); err != nil {
		return nil, err
	} else if ok {
		data, err := b.readPath(fsys, p)
		if err != nil {
			return nil, err
		}
		if rules, err = ignore.Parse(bytes.NewReader(data)); err != nil {
			return nil, failure.New(v1alpha2.ReasonInvalidContent, "%s: %v", p, err)
		}
	}
	rules.AddDefaults()
	return rules, nil
}
