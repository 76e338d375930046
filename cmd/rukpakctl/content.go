package main

import (
	"context"
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
			body, err := openContent(cmd.Context(), b, token)
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

// openContent starts downloading the content of Bundle b (a .tar.gz) from
// its status.contentURL, authenticating with the bearer token. The caller
// closes the body.
func openContent(ctx context.Context, b *v1alpha2.Bundle, token string) (io.ReadCloser, error) {
	if b.Status.ContentURL == "" {
		return nil, fmt.Errorf("Bundle %s has no status.contentURL (not unpacked yet, or the manager runs no content server)", b.Name)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.Status.ContentURL, nil)
	if err != nil {
		return nil, fmt.Errorf("downloading %s: %w", b.Status.ContentURL, err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("downloading %s: %w", b.Status.ContentURL, err)
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		_ = resp.Body.Close()
		return nil, fmt.Errorf("downloading %s: %s: %s", b.Status.ContentURL, resp.Status, msg)
	}
	return resp.Body, nil
}
