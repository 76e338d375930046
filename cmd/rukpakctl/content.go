package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/contentserver"
)

func init() { register(newContentCmd) }

func newContentCmd() *cobra.Command {
	var kubeconfig, out string
	cf := &contentFlags{}
	cmd := &cobra.Command{
		Use:   "content BUNDLE",
		Short: "Download a Bundle's unpacked content (a .tar.gz) from the content server",
		Long: `Download the unpacked content of a Bundle from the manager's content server.
The content server authenticates a bearer token for audience ` + contentserver.Audience + `
(--token, or one requested with --token-for for a ServiceAccount) and requires
the permission get on bundles/content (API group core.rukpak.io) for the
Bundle. The kubeconfig's credentials are never sent, and the token is sent only
when the Bundle's status.contentURL is on the manager's content server
(--content-server).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			cfg, err := loadConfig(kubeconfig, "")
			if err != nil {
				return err
			}
			base, err := cf.base(cfg)
			if err != nil {
				return err
			}
			c, err := client.New(cfg, client.Options{Scheme: scheme()})
			if err != nil {
				return err
			}
			b := &v1alpha2.Bundle{}
			if err := c.Get(ctx, client.ObjectKey{Name: args[0]}, b); err != nil {
				return fmt.Errorf("getting Bundle %s: %w", args[0], err)
			}
			// Refuse an untrusted URL before a token is even requested.
			if _, err := trustedContentURL(b, base); err != nil {
				return err
			}
			token, err := cf.bearer(ctx, cfg, nil)
			if err != nil {
				return err
			}
			body, err := openContent(ctx, b, base, token)
			if err != nil {
				return err
			}
			defer body.Close()
			w := cmd.OutOrStdout()
			if out != "" && out != "-" {
				f, err := os.Create(out)
				if err != nil {
					return err
				}
				defer f.Close()
				w = f
			}
			n, err := io.Copy(w, body)
			if err != nil {
				return fmt.Errorf("downloading %s: %w", b.ContentURL(), err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%s: %d bytes (content %s)\n", b.Name, n, b.ContentDigest())
			return nil
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig (default $KUBECONFIG or ~/.kube/config)")
	cmd.Flags().StringVarP(&out, "output", "o", "-", "file to write the .tar.gz to; - for stdout")
	cf.add(cmd.Flags())
	return cmd
}
