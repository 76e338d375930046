package helm

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// chartFile is the file that makes a directory a chart.
const chartFile = "Chart.yaml"

// maxListed is how many top-level entries a "no chart" message names.
const maxListed = 10

// location says where the chart of a tree is: exactly one of dir and
// archive is set.
type location struct {
	// dir is the chart's directory: "." or a top-level directory.
	dir string
	// archive is the path of a packaged chart (.tgz) at the root.
	archive string
}

// String names the location for messages.
func (l location) String() string {
	switch {
	case l.archive != "":
		return l.archive
	case l.dir == ".":
		return "the bundle's root"
	}
	return l.dir + "/"
}

// findChart finds the chart of fsys: Chart.yaml at the root, else the one
// top-level directory holding a Chart.yaml (how a chart archive or an OCI
// chart artifact unpacks), else the one .tgz file at the root.
func findChart(fsys fs.FS) (location, error) {
	if ok, err := exists(fsys, chartFile); err != nil || ok {
		return location{dir: "."}, err
	}
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return location{}, fmt.Errorf("reading the bundle's root: %w", err)
	}
	var dirs, archives, found []string
	for _, e := range entries {
		name := e.Name()
		switch {
		case e.IsDir():
			found = append(found, name+"/")
			ok, err := exists(fsys, path.Join(name, chartFile))
			if err != nil {
				return location{}, err
			}
			if ok {
				dirs = append(dirs, name)
			}
		case strings.HasSuffix(name, ".tgz"):
			found = append(found, name)
			archives = append(archives, name)
		default:
			found = append(found, name)
		}
	}
	switch {
	case len(dirs) == 1:
		return location{dir: dirs[0]}, nil
	case len(dirs) > 1:
		return location{}, failure.New(v1alpha2.ReasonInvalidContent,
			"bundle holds %d charts, want one: %s", len(dirs), listed(dirs, "/"+chartFile))
	case len(archives) == 1:
		return location{archive: archives[0]}, nil
	case len(archives) > 1:
		return location{}, failure.New(v1alpha2.ReasonInvalidContent,
			"bundle holds %d packaged charts at its root, want one: %s", len(archives), listed(archives, ""))
	}
	what := "nothing"
	if len(found) > 0 {
		what = listed(found, "")
	}
	return location{}, failure.New(v1alpha2.ReasonInvalidContent,
		"bundle holds no Helm chart: no %s at its root or in a top-level directory, and no .tgz at its root; found %s",
		chartFile, what)
}

// exists reports whether p is in fsys.
func exists(fsys fs.FS, p string) (bool, error) {
	_, err := fs.Stat(fsys, p)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("reading %s: %w", p, err)
}

// listed joins the first names, each with suffix, for a message.
func listed(names []string, suffix string) string {
	sort.Strings(names)
	var b strings.Builder
	for i, n := range names {
		if i == maxListed {
			fmt.Fprintf(&b, " and %d more", len(names)-maxListed)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(n + suffix)
	}
	return b.String()
}
