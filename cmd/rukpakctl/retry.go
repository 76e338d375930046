package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

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
