package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// history, rollback and retry work with the revisions (Bundles) a
// BundleDeployment stamps out.
func init() {
	register(newHistoryCmd)
	register(newRollbackCmd)
	register(newRetryCmd)
}

// lifecycleFlags select the cluster of history, rollback and retry.
type lifecycleFlags struct {
	kubeconfig string
	context    string
}

// bind adds --kubeconfig and --context to fs.
func (f *lifecycleFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&f.context, "context", "", "kubeconfig context (default the current one)")
}

// client builds a client from the kubeconfig.
func (f *lifecycleFlags) client() (client.Client, error) {
	cfg, err := loadConfig(f.kubeconfig, f.context)
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme()})
	if err != nil {
		return nil, fmt.Errorf("creating client for %s: %w", cfg.Host, err)
	}
	return c, nil
}

func newHistoryCmd() *cobra.Command {
	f := &lifecycleFlags{}
	var output string
	cmd := &cobra.Command{
		Use:   "history NAME",
		Short: "List the revisions (Bundles) of BundleDeployment NAME, oldest first",
		Long: `List the Bundles BundleDeployment NAME stamped out, oldest first: their
pinned sources, what became of them (OUTCOME: Healthy, Failed or RolledBack,
blank while undecided) and which one is the active, the last healthy and the
failed revision. -o wide adds when each was installed and why it failed;
-o yaml and -o json print the Bundles themselves.`,
		Example: `  rukpakctl history my-operator
  rukpakctl history my-operator -o wide`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains([]string{"", "wide", "yaml", "json"}, output) {
				return fmt.Errorf("--output %q: want wide, yaml or json", output)
			}
			c, err := f.client()
			if err != nil {
				return err
			}
			bd, revs, err := loadRevisions(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			if output == "yaml" || output == "json" {
				return printBundles(cmd.OutOrStdout(), revs, output)
			}
			return printHistory(cmd.OutOrStdout(), bd, revs, output == "wide", time.Now())
		},
	}
	f.bind(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: wide, yaml or json (default a table)")
	return cmd
}

// loadRevisions reads BundleDeployment name and its Bundles, oldest first.
func loadRevisions(ctx context.Context, c client.Client, name string) (*v1alpha2.BundleDeployment, []v1alpha2.Bundle, error) {
	bd := &v1alpha2.BundleDeployment{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
		return nil, nil, fmt.Errorf("getting BundleDeployment %s: %w", name, err)
	}
	list := &v1alpha2.BundleList{}
	if err := c.List(ctx, list, client.MatchingLabels{v1alpha2.LabelBundleDeployment: name}); err != nil {
		return nil, nil, fmt.Errorf("listing Bundles of BundleDeployment %s: %w", name, err)
	}
	sortRevisions(list.Items)
	return bd, list.Items, nil
}

// sortRevisions orders Bundles oldest first, by name within one second, as
// the controller's history cleanup does.
func sortRevisions(revs []v1alpha2.Bundle) {
	slices.SortStableFunc(revs, func(a, b v1alpha2.Bundle) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// printHistory writes the table of revs; wide adds INSTALLED and MESSAGE.
func printHistory(w io.Writer, bd *v1alpha2.BundleDeployment, revs []v1alpha2.Bundle, wide bool, now time.Time) error {
	if len(revs) == 0 {
		_, err := fmt.Fprintf(w, "bd/%s has no revisions yet\n", bd.Name)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := "REVISION\tCREATED\tSOURCES\tOUTCOME\tMARKERS"
	if wide {
		header += "\tINSTALLED\tMESSAGE"
	}
	fmt.Fprintln(tw, header)
	for _, b := range revs {
		row := []string{b.Name, duration.HumanDuration(now.Sub(b.CreationTimestamp.Time)),
			sourcesSummary(b.Spec.Sources), b.Annotations[v1alpha2.AnnotationOutcome],
			strings.Join(revisionMarkers(bd, b.Name), ",")}
		if wide {
			row = append(row, b.Annotations[v1alpha2.AnnotationInstalledAt], oneLine(b.Annotations[v1alpha2.AnnotationOutcomeMessage]))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing history: %w", err)
	}
	return nil
}

// revisionMarkers are the roles the status of bd gives revision name.
func revisionMarkers(bd *v1alpha2.BundleDeployment, name string) []string {
	var m []string
	for _, r := range []struct{ bundle, marker string }{
		{bd.Status.ActiveBundle, "active"},
		{bd.Status.LastHealthyBundle, "last-healthy"},
		{bd.Status.FailedBundle, "failed"},
	} {
		if r.bundle == name {
			m = append(m, r.marker)
		}
	}
	return m
}

// oneLine keeps a message to one table cell.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// printBundles writes revs as a BundleList in format yaml or json, without
// managed fields.
func printBundles(w io.Writer, revs []v1alpha2.Bundle, format string) error {
	list := &v1alpha2.BundleList{Items: make([]v1alpha2.Bundle, 0, len(revs))}
	list.APIVersion, list.Kind = v1alpha2.GroupVersion.String(), "BundleList"
	for _, b := range revs {
		b := *b.DeepCopy()
		b.APIVersion, b.Kind = v1alpha2.GroupVersion.String(), v1alpha2.BundleKind
		b.ManagedFields = nil
		list.Items = append(list.Items, b)
	}
	var data []byte
	var err error
	if format == "json" {
		data, err = json.MarshalIndent(list, "", "  ")
		data = append(data, '\n')
	} else {
		data, err = yaml.Marshal(list)
	}
	if err != nil {
		return fmt.Errorf("encoding Bundles as %s: %w", format, err)
	}
	_, err = w.Write(data)
	return err
}

// sourcesSummary is a short description of pinned sources, one per source.
func sourcesSummary(srcs []v1alpha2.BundleSource) string {
	parts := make([]string, 0, len(srcs))
	for _, s := range srcs {
		parts = append(parts, sourceSummary(s))
	}
	return strings.Join(parts, "; ")
}

// sourceSummary describes one source by its type, location and pin.
func sourceSummary(s v1alpha2.BundleSource) string {
	switch {
	case s.Type == v1alpha2.SourceTypeImage && s.Image != nil:
		ref, pin, _ := strings.Cut(s.Image.Ref, "@")
		if s.Image.Digest != "" {
			pin = s.Image.Digest
		}
		if pin == "" {
			return "image " + ref
		}
		return "image " + ref + "@" + shortDigest(pin)
	case s.Type == v1alpha2.SourceTypeGit && s.Git != nil:
		g := s.Git
		if c := cmp.Or(g.ResolvedCommit, g.Ref.Commit); c != "" {
			return "git " + g.Repository + "@" + c[:min(12, len(c))]
		}
		return "git " + g.Repository + "@" + cmp.Or(g.Ref.Tag, g.Ref.Branch)
	case s.Type == v1alpha2.SourceTypeHTTP && s.HTTP != nil:
		out := "http " + redactURL(s.HTTP.URL)
		if s.HTTP.SHA256 != "" {
			out += " " + shortDigest("sha256:"+s.HTTP.SHA256)
		}
		return out
	case s.Type == v1alpha2.SourceTypeConfigMaps:
		names := make([]string, 0, len(s.ConfigMaps))
		for _, cm := range s.ConfigMaps {
			names = append(names, cm.ConfigMap.Name)
		}
		return "configMaps " + strings.Join(names, ",")
	case s.Type == v1alpha2.SourceTypeUpload && s.Upload != nil:
		return "upload " + shortDigest(s.Upload.Digest)
	}
	return string(s.Type)
}

// shortDigest shortens "alg:hex" to its first 12 hex digits.
func shortDigest(d string) string {
	alg, hex, ok := strings.Cut(d, ":")
	if !ok {
		alg, hex = "", d
	}
	if len(hex) > 12 {
		hex = hex[:12] + "…"
	}
	if alg == "" {
		return hex
	}
	return alg + ":" + hex
}

// redactURL drops credentials and the query (signed URLs carry tokens there).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.User = nil
	if u.RawQuery != "" {
		u.RawQuery = "…"
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

// rollbackOptions are the flags of `rukpakctl rollback`.
type rollbackOptions struct {
	lifecycleFlags
	to string
}

func newRollbackCmd() *cobra.Command {
	o := &rollbackOptions{}
	cmd := &cobra.Command{
		Use:   "rollback NAME",
		Short: "Pin BundleDeployment NAME to an earlier revision",
		Long: `Roll BundleDeployment NAME back to an earlier revision by copying that
Bundle's pinned spec.sources and spec.config into NAME's spec. The pinned
sources make the revision hash match the Bundle, so the controller re-applies
that revision. Without --to the target is status.lastHealthyBundle when it is
not the active revision, else the newest revision older than the active one
whose outcome is not Failed or RolledBack.

Floating refs (image tags, git branches and tags, http URLs without sha256)
become pinned: NAME no longer follows them. Changing the spec later (for
example back to a tag) resumes normal upgrades. Helm values read through
config.valuesFrom are read again; if those objects changed since, the
revision differs from the Bundle rolled back to.`,
		Example: `  rukpakctl rollback my-operator
  rukpakctl rollback my-operator --to my-operator-5f0c2a9d1e`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0])
		},
	}
	o.bind(cmd.Flags())
	cmd.Flags().StringVar(&o.to, "to", "", "revision (Bundle name) to roll back to (default the last healthy or previous one)")
	return cmd
}

// run rewrites the spec of BundleDeployment name to the target revision,
// reading it again when it changed meanwhile.
func (o *rollbackOptions) run(ctx context.Context, stdout, stderr io.Writer, name string) error {
	c, err := o.client()
	if err != nil {
		return err
	}
	var bd *v1alpha2.BundleDeployment
	var target *v1alpha2.Bundle
	unchanged := false
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var revs []v1alpha2.Bundle
		var err error
		if bd, revs, err = loadRevisions(ctx, c, name); err != nil {
			return err
		}
		if target, err = rollbackTarget(bd, revs, o.to); err != nil {
			return err
		}
		unchanged = equality.Semantic.DeepEqual(bd.Spec.Sources, target.Spec.Sources) &&
			equality.Semantic.DeepEqual(bd.Spec.Config, target.Spec.Config)
		if unchanged {
			return nil
		}
		bd.Spec.Sources = target.DeepCopy().Spec.Sources
		bd.Spec.Config = target.Spec.Config.DeepCopy()
		if err := c.Update(ctx, bd); err != nil {
			return fmt.Errorf("updating BundleDeployment %s: %w", name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	was := bd.Status.ActiveBundle
	if was == "" {
		was = "none"
	}
	if unchanged {
		fmt.Fprintf(stdout, "bd/%s: spec already pinned to revision %s (active %s)\n", name, target.Name, was)
	} else {
		fmt.Fprintf(stdout, "bd/%s: sources pinned to revision %s (was %s)\n", name, target.Name, was)
	}
	if target.Name == bd.Status.FailedBundle {
		fmt.Fprintf(stderr, "warning: %s is the failed revision; it is not tried again until `rukpakctl retry %s`\n", target.Name, name)
	}
	if bd.Spec.Paused {
		fmt.Fprintf(stderr, "warning: bd/%s is paused; the rollback is applied when it is unpaused\n", name)
	}
	return nil
}

// errNoRollbackTarget is returned when no revision qualifies as a default
// rollback target.
var errNoRollbackTarget = errors.New("nothing to roll back to")

// rollbackTarget picks the revision of bd to roll back to from revs (oldest
// first): to when it is set, else the last healthy revision when it is not
// the active one, else the newest revision older than the active one that
// did not fail.
func rollbackTarget(bd *v1alpha2.BundleDeployment, revs []v1alpha2.Bundle, to string) (*v1alpha2.Bundle, error) {
	active := bd.Status.ActiveBundle
	find := func(n string) int {
		return slices.IndexFunc(revs, func(b v1alpha2.Bundle) bool { return b.Name == n })
	}
	pick := func(i int) (*v1alpha2.Bundle, error) {
		b := &revs[i]
		if b.Spec.ProvisionerClassName != bd.Spec.ProvisionerClassName {
			return nil, fmt.Errorf("revision %s has class %s, bd/%s has class %s", b.Name, b.Spec.ProvisionerClassName, bd.Name, bd.Spec.ProvisionerClassName)
		}
		return b, nil
	}
	if to != "" {
		i := find(to)
		switch {
		case i < 0:
			return nil, fmt.Errorf("%s is not a revision of bd/%s (see `rukpakctl history %s`)", to, bd.Name, bd.Name)
		case to == active:
			return nil, fmt.Errorf("revision %s is already the active revision of bd/%s", to, bd.Name)
		}
		return pick(i)
	}
	if lh := bd.Status.LastHealthyBundle; lh != "" && lh != active {
		if i := find(lh); i >= 0 {
			return pick(i)
		}
	}
	if active == "" {
		return nil, fmt.Errorf("bd/%s has no active revision to roll back from; name one with --to: %w", bd.Name, errNoRollbackTarget)
	}
	i := find(active)
	if i < 0 {
		return nil, fmt.Errorf("the active revision %s of bd/%s no longer exists; name one with --to: %w", active, bd.Name, errNoRollbackTarget)
	}
	for i--; i >= 0; i-- {
		switch revs[i].Annotations[v1alpha2.AnnotationOutcome] {
		case v1alpha2.OutcomeFailed, v1alpha2.OutcomeRolledBack:
			continue
		}
		return pick(i)
	}
	return nil, fmt.Errorf("bd/%s has no revision older than the active %s that did not fail: %w", bd.Name, active, errNoRollbackTarget)
}

func newRetryCmd() *cobra.Command {
	f := &lifecycleFlags{}
	cmd := &cobra.Command{
		Use:   "retry NAME",
		Short: "Try the failed revision of BundleDeployment NAME again",
		Long: `A revision that failed (status.failedBundle) is not tried again until the
spec names another revision. retry sets the annotation ` + v1alpha2.AnnotationRetry + `
of BundleDeployment NAME to the current time, which makes the controller try
it once more, for example after a missing image tag was pushed or a Secret
was fixed. With no failed revision it changes nothing.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			return retryFailed(cmd.Context(), c, cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], time.Now())
		},
	}
	f.bind(cmd.Flags())
	return cmd
}

// retryFailed sets the retry annotation of BundleDeployment name to now
// when it has a failed revision.
func retryFailed(ctx context.Context, c client.Client, stdout, stderr io.Writer, name string, now time.Time) error {
	bd := &v1alpha2.BundleDeployment{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
		return fmt.Errorf("getting BundleDeployment %s: %w", name, err)
	}
	if bd.Status.FailedBundle == "" {
		fmt.Fprintf(stdout, "bd/%s: nothing to retry\n", name)
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{v1alpha2.AnnotationRetry: now.UTC().Format(time.RFC3339Nano)},
	}})
	if err != nil {
		return fmt.Errorf("encoding the retry patch: %w", err)
	}
	if err := c.Patch(ctx, bd, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("annotating BundleDeployment %s: %w", name, err)
	}
	fmt.Fprintf(stdout, "bd/%s: retrying revision %s\n", name, bd.Status.FailedBundle)
	if bd.Spec.Paused {
		fmt.Fprintf(stderr, "warning: bd/%s is paused; the retry happens when it is unpaused\n", name)
	}
	return nil
}
