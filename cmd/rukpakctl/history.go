package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/history"
	"github.com/rukpak/rukpak/internal/ownership"
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
number (NUMBER: 1 for the first revision, one more for each new one; blank
for revisions created before revisions were numbered), their pinned sources,
what became of them (OUTCOME: Healthy, Failed or RolledBack, blank while
undecided) and which one is the active, the last healthy and the failed
revision. -o wide adds when each was installed and why it failed; -o yaml
and -o json print the Bundles themselves.`,
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
	revs, err := history.Revisions(ctx, c, bd)
	if err != nil {
		return nil, nil, err
	}
	return bd, revs, nil
}

// listRevisions reads the Bundles of BundleDeployment name, oldest first.
func listRevisions(ctx context.Context, c client.Client, name string) ([]v1alpha2.Bundle, error) {
	bd := &v1alpha2.BundleDeployment{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
		return nil, fmt.Errorf("getting BundleDeployment %s: %w", name, err)
	}
	return history.Revisions(ctx, c, bd)
}

// printHistory writes the table of revs; wide adds INSTALLED and MESSAGE.
func printHistory(w io.Writer, bd *v1alpha2.BundleDeployment, revs []v1alpha2.Bundle, wide bool, now time.Time) error {
	if len(revs) == 0 {
		_, err := fmt.Fprintf(w, "bd/%s has no revisions yet\n", bd.Name)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := "NUMBER\tREVISION\tCREATED\tSOURCES\tOUTCOME\tMARKERS"
	if wide {
		header += "\tINSTALLED\tMESSAGE"
	}
	fmt.Fprintln(tw, header)
	for _, b := range revs {
		number := ""
		if n := ownership.RevisionNumber(&b); n > 0 {
			number = strconv.Itoa(n)
		}
		row := []string{number, b.Name, duration.HumanDuration(now.Sub(b.CreationTimestamp.Time)),
			history.SourcesSummary(b.Spec.Sources), history.Outcome(bd, &b),
			strings.Join(history.Markers(bd, b.Name), ",")}
		if wide {
			installed := ""
			if at := history.InstalledAt(bd, &b); at != nil {
				installed = at.UTC().Format(time.RFC3339)
			}
			row = append(row, installed, oneLine(b.Status.OutcomeMessage))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing history: %w", err)
	}
	return nil
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
