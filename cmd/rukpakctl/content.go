package main

import (
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

func init() { register(newContentCmd) }

func newContentCmd() *cobra.Command {
	var kubeconfig, token, out string
	cmd := &cobra.Command{
		Use:   "content BUNDLE",
		Short: "Download a Bundle's unpacked content (a .tar.gz) from the content server",
		Long: `Download the unpacked content of a Bundle from the URL in its
status.contentURL. The content server authenticates a bearer token (a
ServiceAccount token, or the kubeconfig's token) and requires the permission
get on bundles/content (API group core.rukpak.io) for the Bundle.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(kubeconfig, "")
			if err != nil {
				return err
			}
			if token == "" {
				token = cfg.BearerToken
			}
			if token == "" {
				return fmt.Errorf("the content server authenticates bearer tokens: pass --token (e.g. from `kubectl create token`)")
			}
			c, err := client.New(cfg, client.Options{Scheme: scheme()})
			if err != nil {
				return err
			}
			b := &v1alpha2.Bundle{}
			if err := c.Get(cmd.Context(), client.ObjectKey{Name: args[0]}, b); err != nil {
				return fmt.Errorf("getting Bundle %s: %w", args[0], err)
			}
			if b.Status.ContentURL == "" {
				return fmt.Errorf("Bundle %s has no status.contentURL (not unpacked yet, or the manager runs no content server)", b.Name)
			}
			req, err := http.NewRequestWithContext(cmd.Context(), http.MethodGet, b.Status.ContentURL, nil)
			if err != nil {
				return err
			}
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return fmt.Errorf("downloading %s: %w", b.Status.ContentURL, err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
				return fmt.Errorf("downloading %s: %s: %s", b.Status.ContentURL, resp.Status, msg)
			}
			w := cmd.OutOrStdout()
			if out != "" && out != "-" {
				f, err := os.Create(out)
				if err != nil {
					return err
				}
				defer f.Close()
				w = f
			}
			n, err := io.Copy(w, resp.Body)
			if err != nil {
				return fmt.Errorf("downloading %s: %w", b.Status.ContentURL, err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%s: %d bytes (content %s)\n", b.Name, n, b.Status.ContentDigest)
			return nil
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig (default $KUBECONFIG or ~/.kube/config)")
	cmd.Flags().StringVar(&token, "token", "", "bearer token for the content server (default: the kubeconfig's token)")
	cmd.Flags().StringVarP(&out, "output", "o", "-", "file to write the .tar.gz to; - for stdout")
	return cmd
}
