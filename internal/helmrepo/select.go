package helmrepo

import (
	"fmt"
	"strings"

	repov1 "helm.sh/helm/v4/pkg/repo/v1"

	"github.com/rukpak/rukpak/internal/versionrange"
)

// Select returns the version of c that constraint selects, as Helm
// selects one: an exact version names that version; a range the newest
// version in it (a pre-release only when the range names one). Entries
// marked removed are never selected.
func (c *Chart) Select(constraint string) (*repov1.ChartVersion, error) {
	r, err := versionrange.Parse(constraint)
	if err != nil {
		return nil, err
	}
	byName := map[string]*repov1.ChartVersion{}
	names := make([]string, 0, len(c.Versions))
	for _, v := range c.Versions {
		if v.Removed {
			continue
		}
		if _, dup := byName[v.Version]; !dup {
			byName[v.Version] = v
			names = append(names, v.Version)
		}
	}
	if r.Exact() {
		if v := byName[constraint]; v != nil {
			return v, nil
		}
	}
	best, ok := r.Newest(names)
	if !ok {
		return nil, fmt.Errorf("chart %q has no version in %q (%d versions published)", c.Name, constraint, len(names))
	}
	return byName[best.Name], nil
}

// ChartURL returns where the archive of v is: its first URL, resolved
// against the repository's URL when it is relative.
func ChartURL(repoURL string, v *repov1.ChartVersion) (string, error) {
	if len(v.URLs) == 0 || strings.TrimSpace(v.URLs[0]) == "" {
		return "", fmt.Errorf("chart %q version %q has no URL in the index", v.Name, v.Version)
	}
	u, err := repov1.ResolveReferenceURL(repoURL, v.URLs[0])
	if err != nil {
		return "", fmt.Errorf("chart %q version %q: %w", v.Name, v.Version, err)
	}
	if !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
		return "", fmt.Errorf("chart %q version %q: URL %q is not http(s)", v.Name, v.Version, u)
	}
	return u, nil
}
