package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	repov1 "helm.sh/helm/v4/pkg/repo/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/catalog"
	"github.com/rukpak/rukpak/internal/versionrange"
)

func init() { register(newVersionsCmd) }

func newVersionsCmd() *cobra.Command {
	f := &lifecycleFlags{}
	cmd := &cobra.Command{
		Use:   "versions NAME",
		Short: "List the published versions of what BundleDeployment NAME follows",
		Long: `For each source of BundleDeployment NAME that follows published versions,
versions reads what is published now, with the source's credentials (which
needs read access to their Secret in rukpak-system), and lists it newest
first, each version with what it is to NAME:

  helmRepository   the chart's versions in the repository's index (the tags
                   of an oci:// repository)
  image, git       the tags of an image with versions, of a git source with
                   ref.semver
                   installed, newest in range (what a resolve selects now),
                   awaiting approval, failed before, in range, out of range,
                   removed from the index, no longer published
  catalog          the bundles of the package in the source's channels,
                   resolved from the installed bundle: installed, newest
                   reachable (what a resolve selects now), awaiting
                   approval, failed before, in range, out of range, no edge
                   from installed, deprecated`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			return listVersions(cmd.Context(), c, cmd.OutOrStdout(), args[0])
		},
	}
	f.bind(cmd.Flags())
	return cmd
}

// The states versions gives a published version.
const (
	stateInstalled   = "installed"
	stateSelected    = "newest in range"
	stateAwaiting    = "awaiting approval"
	stateFailed      = "failed before"
	stateInRange     = "in range"
	stateOutside     = "out of range"
	stateRemoved     = "removed from the index"
	stateUnpublished = "no longer published"
	stateReachable   = "newest reachable"
	stateNoEdge      = "no edge from installed"
	stateDeprecated  = "deprecated"
)

// followed is what a BundleDeployment's status and revisions say of one
// source it follows: the versions (for a catalog, the bundles) installed,
// resolved last, and failed, and whether the one resolved last awaits
// approval.
type followed struct {
	constraint, installed, selected, failed string
	awaiting                                bool
}

// published is one published version: its name as published (a chart
// version, a tag) and, when it is not offered any more, the state saying
// so.
type published struct {
	name, gone string
}

// chartVersions is the versions of a chart's index entries.
func chartVersions(versions []*repov1.ChartVersion) []published {
	out := make([]published, 0, len(versions))
	for _, v := range versions {
		p := published{name: v.Version}
		if v.Removed {
			p.gone = stateRemoved
		}
		out = append(out, p)
	}
	return out
}

// tagVersions is the versions of tags (all of them published).
func tagVersions(tags []string) []published {
	out := make([]published, 0, len(tags))
	for _, t := range tags {
		out = append(out, published{name: t})
	}
	return out
}

// versionRow is one published version and what it is to the follower.
type versionRow struct {
	version string
	states  []string
}

// versionStates lists the published versions, newest first (those that
// are not versions left out), with their states. The installed version,
// when it is not published any more, is listed too.
func versionStates(pub []published, f followed) ([]versionRow, error) {
	constraint := f.constraint
	if constraint == "" {
		constraint = "*"
	}
	r, err := versionrange.Parse(constraint)
	if err != nil {
		return nil, err
	}
	gone := map[string]string{}
	names := make([]string, 0, len(pub)+1)
	for _, p := range pub {
		if _, dup := gone[p.name]; !dup {
			names = append(names, p.name)
		}
		gone[p.name] = p.gone
	}
	if _, ok := gone[f.installed]; !ok && f.installed != "" {
		names = append(names, f.installed)
		gone[f.installed] = stateUnpublished
	}
	var rows []versionRow
	for _, c := range versionrange.Sort(names) {
		row := versionRow{version: c.Name}
		switch {
		case c.Name == f.installed:
			row.states = append(row.states, stateInstalled)
		case c.Name == f.failed:
			row.states = append(row.states, stateFailed)
		case c.Name == f.selected && f.awaiting:
			row.states = append(row.states, stateAwaiting)
		}
		switch {
		case gone[c.Name] != "":
			row.states = append(row.states, gone[c.Name])
		case !r.Includes(c.Version):
			row.states = append(row.states, stateOutside)
		case c.Name == f.selected:
			row.states = append(row.states, stateSelected)
		default:
			row.states = append(row.states, stateInRange)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// catalogRow is one bundle of a catalog's package and what it is to the
// follower.
type catalogRow struct {
	version, bundle string
	channels        []string
	states          []string
}

// catalogStates lists the bundles of res in the query's channels, newest
// first, with their states: the resolution from the installed bundle says
// which is the newest reachable, and why each other is not taken.
func catalogStates(res catalog.Result, f followed) []catalogRow {
	var rows []catalogRow
	for _, c := range res.Candidates {
		if c.Why == catalog.WhyNotInChannel {
			continue
		}
		row := catalogRow{version: c.Bundle.Version.Original(), bundle: c.Bundle.Name, channels: c.Channels}
		switch {
		case c.Bundle.Name == f.installed:
			row.states = append(row.states, stateInstalled)
		case c.Bundle.Name == f.failed:
			row.states = append(row.states, stateFailed)
		case c.Bundle.Name == f.selected && f.awaiting:
			row.states = append(row.states, stateAwaiting)
		}
		switch c.Why {
		case catalog.WhySelected:
			row.states = append(row.states, stateReachable)
		case catalog.WhyOutOfRange:
			row.states = append(row.states, stateOutside)
		case catalog.WhyNotAnEdge:
			row.states = append(row.states, stateNoEdge)
		default:
			row.states = append(row.states, stateInRange)
		}
		if c.Bundle.Deprecated != "" {
			row.states = append(row.states, stateDeprecated)
		}
		rows = append(rows, row)
	}
	return rows
}

// listVersions prints the versions of each source of BundleDeployment
// name that follows published versions.
func listVersions(ctx context.Context, c client.Client, w io.Writer, name string) error {
	bd := &v1alpha2.BundleDeployment{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
		return fmt.Errorf("getting BundleDeployment %s: %w", name, err)
	}
	workDir, err := os.MkdirTemp("", "rukpakctl-versions-")
	if err != nil {
		return fmt.Errorf("making a work directory: %w", err)
	}
	defer func() { _ = os.RemoveAll(workDir) }()
	l := newLister(c, workDir)
	active := bundleSources(ctx, c, bd.Status.ActiveBundle)
	failed := bundleSources(ctx, c, bd.Status.FailedBundle)
	installed := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled)
	awaiting := installed != nil && installed.Reason == v1alpha2.ReasonAwaitingApproval
	found := false
	for i, src := range bd.Spec.Sources {
		f := followed{installed: resolvedAt(active, i), failed: resolvedAt(failed, i),
			selected: resolvedAt(bd.Status.ResolvedSources, i), awaiting: awaiting}
		t, err := l.table(ctx, src, f)
		if err != nil {
			return fmt.Errorf("spec.sources[%d]: %w", i, err)
		}
		if t == nil {
			continue
		}
		found = true
		if err := t.write(w, i); err != nil {
			return err
		}
	}
	if !found {
		return fmt.Errorf("BundleDeployment %s has no source that follows published versions "+
			"(helmRepository, catalog, image with versions, git with ref.semver)", name)
	}
	return nil
}

// bundleSources returns the pinned sources of Bundle name, nil when there
// is none or it cannot be read.
func bundleSources(ctx context.Context, c client.Client, name string) []v1alpha2.BundleSource {
	if name == "" {
		return nil
	}
	b := &v1alpha2.Bundle{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, b); err != nil {
		return nil
	}
	return b.Spec.Sources
}

// resolvedAt is what the source at i was resolved to, as versions names
// it: a chart's version, an image's or git repository's tag, a catalog's
// bundle.
func resolvedAt(srcs []v1alpha2.BundleSource, i int) string {
	if i >= len(srcs) {
		return ""
	}
	switch s := srcs[i]; {
	case s.HelmRepository != nil:
		return s.HelmRepository.ResolvedVersion
	case s.Image != nil:
		return s.Image.ResolvedTag
	case s.Git != nil:
		return s.Git.ResolvedTag
	case s.Catalog != nil:
		return s.Catalog.ResolvedBundle
	}
	return ""
}
