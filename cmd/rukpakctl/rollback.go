package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/util/retry"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/history"
)

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
		switch history.Outcome(bd, &revs[i]) {
		case v1alpha2.OutcomeFailed, v1alpha2.OutcomeRolledBack:
			continue
		}
		return pick(i)
	}
	return nil, fmt.Errorf("bd/%s has no revision older than the active %s that did not fail: %w", bd.Name, active, errNoRollbackTarget)
}
