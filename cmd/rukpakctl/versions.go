package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	repov1 "helm.sh/helm/v4/pkg/repo/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/helmrepo"
	"github.com/rukpak/rukpak/internal/source/credentials"
	httpsource "github.com/rukpak/rukpak/internal/source/http"
	"github.com/rukpak/rukpak/internal/versionrange"
)

func init() { register(newVersionsCmd) }

func newVersionsCmd() *cobra.Command {
	f := &lifecycleFlags{}
	cmd := &cobra.Command{
		Use:   "versions NAME",
		Short: "List the published versions of what BundleDeployment NAME follows",
		Long: `For each helmRepository source of BundleDeployment NAME, versions reads the
repository's index (with the source's credentials, which needs read access to
their Secret in rukpak-system) and lists the chart's published versions, newest
first, each with what it is to NAME: installed, the newest in range (what a
resolve selects now), awaiting approval, failed before, in range, out of
range, or removed from the index.`,
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
	stateInstalled = "installed"
	stateSelected  = "newest in range"
	stateAwaiting  = "awaiting approval"
	stateFailed    = "failed before"
	stateInRange   = "in range"
	stateOutside   = "out of range"
	stateRemoved   = "removed from the index"
)

// followed is what a BundleDeployment's status and revisions say of one
// source it follows: the versions installed, resolved last, and failed,
// and whether the one resolved last awaits approval.
type followed struct {
	constraint, installed, selected, failed string
	awaiting                                bool
}

// versionRow is one published version and what it is to the follower.
type versionRow struct {
	version string
	states  []string
}

// versionStates lists the published versions, newest first (those that
// are not versions left out), with their states.
func versionStates(published []*repov1.ChartVersion, f followed) ([]versionRow, error) {
	constraint := f.constraint
	if constraint == "" {
		constraint = "*"
	}
	r, err := versionrange.Parse(constraint)
	if err != nil {
		return nil, err
	}
	removed := map[string]bool{}
	names := make([]string, 0, len(published))
	for _, v := range published {
		names = append(names, v.Version)
		if v.Removed {
			removed[v.Version] = true
		}
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
		case removed[c.Name]:
			row.states = append(row.states, stateRemoved)
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

// listVersions prints the versions of each helmRepository source of
// BundleDeployment name.
func listVersions(ctx context.Context, c client.Client, w io.Writer, name string) error {
	bd := &v1alpha2.BundleDeployment{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
		return fmt.Errorf("getting BundleDeployment %s: %w", name, err)
	}
	active := bundleSources(ctx, c, bd.Status.ActiveBundle)
	failed := bundleSources(ctx, c, bd.Status.FailedBundle)
	installed := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled)
	awaiting := installed != nil && installed.Reason == v1alpha2.ReasonAwaitingApproval
	creds := credentials.NewReader(c, v1alpha2.SystemNamespace)
	get := httpsource.New(creds)
	found := false
	for i, src := range bd.Spec.Sources {
		h := src.HelmRepository
		if h == nil {
			continue
		}
		found = true
		chart, err := readChart(ctx, get, h)
		if err != nil {
			return err
		}
		f := followed{constraint: h.Version, installed: resolvedAt(active, i), failed: resolvedAt(failed, i),
			selected: resolvedAt(bd.Status.ResolvedSources, i), awaiting: awaiting}
		rows, err := versionStates(chart.Versions, f)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "spec.sources[%d]: chart %s of %s, version %q\n", i, h.Chart, h.URL, h.Version)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "VERSION\tSTATE")
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\n", r.version, strings.Join(r.states, ", "))
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("writing the table: %w", err)
		}
	}
	if !found {
		return fmt.Errorf("BundleDeployment %s has no source that follows published versions (helmRepository)", name)
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

// resolvedAt is the resolved version of the helmRepository source at i.
func resolvedAt(srcs []v1alpha2.BundleSource, i int) string {
	if i < len(srcs) && srcs[i].HelmRepository != nil {
		return srcs[i].HelmRepository.ResolvedVersion
	}
	return ""
}

// readChart reads h's chart of its repository's index.
func readChart(ctx context.Context, get *httpsource.Source, h *v1alpha2.HelmRepositorySource) (*helmrepo.Chart, error) {
	indexURL, err := repov1.ResolveReferenceURL(h.URL, "index.yaml")
	if err != nil {
		return nil, fmt.Errorf("the repository URL %s: %w", h.URL, err)
	}
	resp, done, err := get.Get(ctx, &v1alpha2.HTTPSource{URL: indexURL, Auth: h.Auth, CASecret: h.CASecret, InsecureSkipTLSVerify: h.InsecureSkipTLSVerify}, nil)
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
