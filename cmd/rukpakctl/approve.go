package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/approval"
	"github.com/rukpak/rukpak/internal/review"
)

// review and approve show and approve the revision a BundleDeployment's
// spec.upgrade.approval holds.
func init() {
	register(newReviewCmd)
	register(newApproveCmd)
}

func newReviewCmd() *cobra.Command {
	f := &lifecycleFlags{}
	var output string
	cmd := &cobra.Command{
		Use:   "review NAME",
		Short: "Show the review of the newest revision of BundleDeployment NAME",
		Long: `Print status.review of BundleDeployment NAME: the newest revision that was
reviewed, the revision it was compared with, whether it is approved, whether
it grows power and what it adds, changes and removes, the RBAC rules subjects
gain and lose, the API surface it changes and what the install identity
needs. -o yaml and -o json print status.review as stored.`,
		Example: `  rukpakctl review my-operator
  rukpakctl review my-operator -o yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains([]string{"", "yaml", "json"}, output) {
				return fmt.Errorf("--output %q: want yaml or json", output)
			}
			c, err := f.client()
			if err != nil {
				return err
			}
			return showReview(cmd.Context(), c, cmd.OutOrStdout(), args[0], output)
		},
	}
	f.bind(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: yaml or json (default a readable summary)")
	return cmd
}

// showReview prints status.review of BundleDeployment name.
func showReview(ctx context.Context, c client.Client, out io.Writer, name, output string) error {
	bd := &v1alpha2.BundleDeployment{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
		return fmt.Errorf("getting BundleDeployment %s: %w", name, err)
	}
	r := bd.Status.Review
	switch {
	case output == "json":
		data, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return fmt.Errorf("encoding the review: %w", err)
		}
		_, err = fmt.Fprintln(out, string(data))
		return err
	case output == "yaml":
		data, err := yaml.Marshal(r)
		if err != nil {
			return fmt.Errorf("encoding the review: %w", err)
		}
		_, err = out.Write(data)
		return err
	case r == nil:
		_, err := fmt.Fprintf(out, "bd/%s: no revision reviewed (upgrades, and every revision under spec.upgrade.approval PowerGrowth or Always, are reviewed)\n", name)
		return err
	}
	_, err := io.WriteString(out, formatReview(bd))
	return err
}

// formatReview is the readable form of bd's status.review.
func formatReview(bd *v1alpha2.BundleDeployment) string {
	r := bd.Status.Review
	var b strings.Builder
	fmt.Fprintf(&b, "Revision:        %s\n", r.Revision)
	if r.Digest != "" {
		fmt.Fprintf(&b, "Digest:          %s\n", r.Digest)
	}
	active := r.ActiveRevision
	if active == "" {
		active = "(none: a first install)"
	}
	fmt.Fprintf(&b, "Compared with:   %s\n", active)
	state := "awaiting approval: rukpakctl approve " + bd.Name
	if r.Approved {
		state = "approved"
		if r.ApprovedBy != "" {
			state += " by " + r.ApprovedBy
		}
	}
	fmt.Fprintf(&b, "Approval:        %s (policy %s)\n", state, bd.Spec.Upgrade.Approval())
	fmt.Fprintf(&b, "Grows power:     %v\n", r.Review.GrowsPower)
	if r.Review.Summary != "" {
		fmt.Fprintf(&b, "Summary:         %s\n", r.Review.Summary)
	}
	o := r.Review.Objects
	fmt.Fprintf(&b, "Objects:         %d added, %d changed, %d removed\n", o.AddedCount, o.ChangedCount, o.RemovedCount)
	for _, a := range o.Added {
		fmt.Fprintf(&b, "  + %s\n", review.ObjectText(a))
	}
	for _, c := range o.Changed {
		fmt.Fprintf(&b, "  ~ %s\n", review.ObjectText(c.Object))
	}
	for _, rm := range o.Removed {
		fmt.Fprintf(&b, "  - %s\n", review.ObjectText(rm))
	}
	rb := r.Review.RBAC
	if rb.GainedCount+rb.LostCount > 0 {
		fmt.Fprintf(&b, "RBAC:            %d rules gained, %d lost, by %d subjects\n", rb.GainedCount, rb.LostCount, rb.SubjectCount)
		for _, g := range rb.Gained {
			fmt.Fprintf(&b, "  + %s: %s\n", review.SubjectText(g.Subject), review.RuleText(g.Rule))
		}
		for _, g := range rb.Lost {
			fmt.Fprintf(&b, "  - %s: %s\n", review.SubjectText(g.Subject), review.RuleText(g.Rule))
		}
	}
	return b.String()
}

func newApproveCmd() *cobra.Command {
	f := &lifecycleFlags{}
	var revision string
	cmd := &cobra.Command{
		Use:   "approve NAME",
		Short: "Approve the revision BundleDeployment NAME holds for approval",
		Long: `A revision held by spec.upgrade.approval (Installed: AwaitingApproval) is
applied once approved. approve sets the annotation
` + v1alpha2.AnnotationApproveRevision + ` of BundleDeployment NAME to the
approval digest of the revision awaiting approval (status.review.digest: a
digest of its pinned spec, content and rendered objects); admission records
you as the approver, and you need verb "` + v1alpha2.VerbApprove + `" on bundledeployments NAME
(group core.rukpak.io). The approval is of that revision only: a newer one,
or another one under the same name, needs a new approval. --revision makes
sure you approve the revision you reviewed: give the digest rukpakctl review
printed; approve refuses when another one awaits approval. A Bundle name is
refused: other content can carry the same name. Without --revision,
approve approves whatever awaits approval when it runs, and prints its
digest. With nothing awaiting approval it changes nothing.`,
		Example: `  rukpakctl review my-operator
  rukpakctl approve my-operator --revision sha256:4f1c…`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			return approveRevision(cmd.Context(), c, cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], revision)
		},
	}
	f.bind(cmd.Flags())
	cmd.Flags().StringVar(&revision, "revision", "", "the approval digest (sha256:…, from rukpakctl review) of the revision you approve; refused if another one awaits approval")
	return cmd
}

// approveRevision approves, with approval.Approve, the revision
// BundleDeployment name holds for approval, which must be want when want
// is set.
func approveRevision(ctx context.Context, c client.Client, stdout, stderr io.Writer, name, want string) error {
	a, err := approval.Approve(ctx, c, name, want)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "bd/%s: approved revision %s (%s)\n", name, a.Revision, a.Digest)
	if a.Paused {
		fmt.Fprintf(stderr, "warning: bd/%s is paused; the revision is applied when it is unpaused\n", name)
	}
	return nil
}
