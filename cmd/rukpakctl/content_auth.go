package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/pflag"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/contentserver"
	"github.com/rukpak/rukpak/internal/localcluster"
	"github.com/rukpak/rukpak/internal/upload"
)

// contentServerEnv names the manager's content server when
// --content-server is not given.
const contentServerEnv = "RUKPAK_CONTENT_SERVER"

// tokenSeconds is how long a requested token lives: the shortest the API
// server grants.
const tokenSeconds = 600

// contentFlags are the flags of the commands that talk to the manager's
// content server: where it is, and the token for it. rukpakctl sends a
// token only to that address, and never the kubeconfig's credentials.
type contentFlags struct {
	server   string
	token    string
	tokenFor string
}

// add registers the flags on fs.
func (f *contentFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.server, "content-server", "", "base URL of the manager's content server (its --content-url), the only address rukpakctl sends a token to "+
		"(default $"+contentServerEnv+", or the local cluster's when the kubeconfig points at it)")
	fs.StringVar(&f.token, "token", "", "bearer token for the content server, for audience "+contentserver.Audience)
	fs.StringVar(&f.tokenFor, "token-for", "", "NAMESPACE/NAME: request a short-lived token for audience "+contentserver.Audience+
		" for this ServiceAccount (needs create on serviceaccounts/token)")
}

// hasToken reports whether a token was asked for.
func (f *contentFlags) hasToken() bool { return f.token != "" || f.tokenFor != "" }

// base returns the manager's content server: --content-server, else
// $RUKPAK_CONTENT_SERVER, else the local cluster's of the state directory
// when cfg points at its API server.
func (f *contentFlags) base(cfg *rest.Config) (string, error) {
	base := f.server
	if base == "" {
		base = os.Getenv(contentServerEnv)
	}
	if base == "" {
		base = localContentServer(cfg)
	}
	if base == "" {
		return "", fmt.Errorf("the address of the manager's content server is not known: pass --content-server URL (the manager's --content-url) or set $%s", contentServerEnv)
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" {
		return "", fmt.Errorf("content server %q: want an http(s) URL without credentials or query", base)
	}
	return strings.TrimRight(base, "/"), nil
}

// localContentServer returns the content server of the local cluster of
// the state directory when cfg points at that cluster's API server, else "".
func localContentServer(cfg *rest.Config) string {
	apiServer, content, err := localcluster.ContentServer(defaultStateDir())
	if err != nil || content == "" || !sameServer(apiServer, cfg.Host) {
		return ""
	}
	return content
}

// sameServer reports whether two API server URLs are the same.
func sameServer(a, b string) bool {
	ua, errA := url.Parse(a)
	ub, errB := url.Parse(b)
	return errA == nil && errB == nil && strings.EqualFold(ua.Host, ub.Host) && ua.Scheme == ub.Scheme
}

// bearer returns the token for the content server: --token; else a token
// requested for --token-for, or else for def (nil: none), with the
// content server's audience.
func (f *contentFlags) bearer(ctx context.Context, cfg *rest.Config, def *types.NamespacedName) (string, error) {
	if f.token != "" {
		return f.token, nil
	}
	sa := def
	if f.tokenFor != "" {
		ns, name, ok := strings.Cut(f.tokenFor, "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return "", fmt.Errorf("--token-for %q: want NAMESPACE/NAME of a ServiceAccount", f.tokenFor)
		}
		sa = &types.NamespacedName{Namespace: ns, Name: name}
	}
	if sa == nil {
		return "", fmt.Errorf("the content server takes a token for audience %s, never the kubeconfig's credentials: "+
			"pass --token-for NAMESPACE/NAME (a ServiceAccount you may create tokens for) or --token", contentserver.Audience)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", fmt.Errorf("creating clientset for %s: %w", cfg.Host, err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(sa.Namespace).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{contentserver.Audience}, ExpirationSeconds: ptr.To[int64](tokenSeconds)},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token for ServiceAccount %s (audience %s): %w", sa, contentserver.Audience, err)
	}
	return tr.Status.Token, nil
}

// contentClient is the HTTP client for the content server. It follows no
// redirect: the token goes to the content server and nowhere else.
var contentClient = &http.Client{
	CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		return fmt.Errorf("the content server redirected to %s: not followed", req.URL.Redacted())
	},
}

// trustedContentURL returns where the content of Bundle b is served, when
// its content URL (spec.unpacked.contentURL, else status.contentURL) is on
// the content server base; otherwise it refuses, sending nothing: anyone
// allowed to update bundles/status can write status.contentURL.
func trustedContentURL(b *v1alpha2.Bundle, base string) (string, error) {
	got, field := b.ContentURL(), "status.contentURL"
	if b.Spec.Unpacked != nil {
		field = "spec.unpacked.contentURL"
	}
	if got == "" {
		return "", fmt.Errorf("Bundle %s has no %s (not unpacked yet, or the manager runs no content server)", b.Name, field)
	}
	want := contentserver.URL(base, b.Name)
	if got != want {
		return "", fmt.Errorf("Bundle %s: %s %q is not the manager's content server (%s): refusing to send a token to it "+
			"(pass --content-server if the manager serves content at another address)", b.Name, field, got, want)
	}
	return want, nil
}

// openContent starts downloading the content of Bundle b (a .tar.gz) from
// the content server base, authenticating with the bearer token. The
// caller closes the body.
func openContent(ctx context.Context, b *v1alpha2.Bundle, base, token string) (io.ReadCloser, error) {
	target, err := trustedContentURL(b, base)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, fmt.Errorf("downloading %s: %w", target, err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := contentClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("downloading %s: %w", target, err)
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		_ = resp.Body.Close()
		return nil, fmt.Errorf("downloading %s: %s: %s", target, resp.Status, strings.TrimSpace(string(msg)))
	}
	return resp.Body, nil
}

// putUpload uploads archive a to the content server base.
func putUpload(ctx context.Context, base, token string, a *upload.Archive) (*contentserver.UploadResult, error) {
	target := contentserver.UploadURL(base, a.Digest)
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, target, io.NopCloser(a))
	if err != nil {
		return nil, fmt.Errorf("uploading to %s: %w", target, err)
	}
	req.ContentLength = a.Size
	req.Header.Set("Content-Type", "application/gzip")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := contentClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("uploading to %s: %w", target, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("uploading to %s: %w", target, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("uploading to %s: %s: %s", target, resp.Status, strings.TrimSpace(string(body)))
	}
	res := &contentserver.UploadResult{}
	if err := json.Unmarshal(body, res); err != nil {
		return nil, fmt.Errorf("uploading to %s: reading the answer: %w", target, err)
	}
	if res.Digest != a.Digest {
		return nil, errors.New("uploading to " + target + ": the server stored " + res.Digest + ", not " + a.Digest)
	}
	return res, nil
}
