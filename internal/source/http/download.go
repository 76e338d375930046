package http

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"net/url"
	"strings"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// maxRedirects is how many redirects a download follows, as net/http does.
const maxRedirects = 10

// download fetches the archive h names, writes it to w and returns its
// sha256 (lowercase hex).
func (s *Source) download(ctx context.Context, h *v1alpha2.HTTPSource, w io.Writer) (string, error) {
	u := redact(h.URL)
	ctx, cancel := context.WithTimeoutCause(ctx, s.timeout, errTimeout)
	defer cancel()
	sum, err := s.get(ctx, h, u, w)
	if err != nil && errors.Is(context.Cause(ctx), errTimeout) {
		return "", failure.New(v1alpha2.ReasonResourceLimit, "http source %s: the download took longer than the limit of %s", u, s.timeout)
	}
	return sum, err
}

// errTimeout is the cause of a download's context when its timeout passes.
var errTimeout = errors.New("download timeout")

// get downloads the archive h (whose URL u names in messages) within ctx.
func (s *Source) get(ctx context.Context, h *v1alpha2.HTTPSource, u string, w io.Writer) (string, error) {
	resp, done, err := s.Get(ctx, h, nil)
	if err != nil {
		return "", err
	}
	defer done()
	if resp.StatusCode != nethttp.StatusOK {
		return "", checkStatus(u, resp.StatusCode)
	}
	if resp.ContentLength > s.maxSize {
		return "", s.tooLarge(u)
	}
	hash := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, hash), io.LimitReader(resp.Body, s.maxSize+1))
	if err != nil {
		return "", fmt.Errorf("http source %s: reading the response: %w", u, err)
	}
	if n > s.maxSize {
		return "", s.tooLarge(u)
	}
	return hex.EncodeToString(hash.Sum(nil)), nil
}

// Get sends a GET request for h.URL with h's credentials and TLS
// configuration and the header given, refusing a redirect from https to
// http, and returns the response and a function that closes it. A
// response other than 200 OK and 304 Not Modified is returned as an error,
// classified as a download's (checkStatus); the body is the caller's to
// bound. Messages name the URL without its password.
func (s *Source) Get(ctx context.Context, h *v1alpha2.HTTPSource, header nethttp.Header) (*nethttp.Response, func(), error) {
	u := redact(h.URL)
	req, err := nethttp.NewRequestWithContext(ctx, nethttp.MethodGet, h.URL, nil)
	if err != nil { // the parse error would quote the URL, credentials and all
		return nil, nil, failure.New(v1alpha2.ReasonUnpackFailed, "http source %s: the URL is not valid", u)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("User-Agent", "rukpak")
	if err := s.authorize(ctx, req, h.Auth); err != nil {
		return nil, nil, fmt.Errorf("http source %s: %w", u, err)
	}
	client, err := s.client(ctx, h)
	if err != nil {
		return nil, nil, fmt.Errorf("http source %s: %w", u, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		client.CloseIdleConnections()
		if f := failure.As(err); f != nil {
			return nil, nil, f
		}
		return nil, nil, fmt.Errorf("http source %s: %w", u, err) // net/http strips passwords from URLs in errors
	}
	done := func() { _ = resp.Body.Close(); client.CloseIdleConnections() }
	if resp.StatusCode != nethttp.StatusOK && resp.StatusCode != nethttp.StatusNotModified {
		done()
		return nil, nil, checkStatus(u, resp.StatusCode)
	}
	return resp, done, nil
}

func (s *Source) tooLarge(u string) error {
	return failure.New(v1alpha2.ReasonUnpackFailed, "http source %s: the archive is larger than the limit of %d bytes", u, s.maxSize)
}

// client returns an HTTP client for one download with the TLS configuration
// of h. It does not decompress responses (the archive's bytes are hashed as
// served) and refuses redirects from https to http.
func (s *Source) client(ctx context.Context, h *v1alpha2.HTTPSource) (*nethttp.Client, error) {
	cfg, err := s.creds.TLSConfig(ctx, h.CASecret, h.InsecureSkipTLSVerify)
	if err != nil {
		return nil, err
	}
	tr := &nethttp.Transport{Proxy: nethttp.ProxyFromEnvironment}
	if def, ok := nethttp.DefaultTransport.(*nethttp.Transport); ok {
		tr = def.Clone() // its dialer, proxy and timeouts
	}
	tr.TLSClientConfig = cfg
	tr.DisableCompression = true
	return &nethttp.Client{Transport: tr, CheckRedirect: checkRedirect}, nil
}

// checkRedirect refuses a redirect from https to plain http, which would
// drop the TLS protection the source asked for, and stops after
// maxRedirects. (net/http itself drops credentials on redirects to other
// hosts.)
func checkRedirect(req *nethttp.Request, via []*nethttp.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	if via[0].URL.Scheme == "https" && req.URL.Scheme != "https" {
		return failure.New(v1alpha2.ReasonUnpackFailed, "http source %s: redirected from https to %s, which is not https",
			redact(via[0].URL.String()), redact(req.URL.String()))
	}
	return nil
}

// authorize adds the credentials of the Secret auth names to req: a bearer
// token under the key token (surrounding whitespace ignored), or else basic
// authentication with the keys username and password.
func (s *Source) authorize(ctx context.Context, req *nethttp.Request, auth *v1alpha2.HTTPAuth) error {
	if auth == nil {
		return nil
	}
	secret, err := s.creds.Secret(ctx, &auth.Secret)
	if err != nil {
		return err
	}
	token := strings.TrimSpace(string(secret.Data["token"]))
	user := string(secret.Data["username"])
	switch {
	case token != "":
		req.Header.Set("Authorization", "Bearer "+token)
	case user != "":
		req.SetBasicAuth(user, string(secret.Data["password"]))
	default:
		return failure.New(v1alpha2.ReasonUnpackFailed, "Secret %s/%s has neither a token key nor a username key",
			s.creds.Namespace(), auth.Secret.Name)
	}
	return nil
}

// checkStatus returns the error of a response with status code; nil for 200.
func checkStatus(u string, code int) error {
	status := fmt.Sprintf("%d %s", code, nethttp.StatusText(code))
	switch {
	case code == nethttp.StatusOK:
		return nil
	case code == nethttp.StatusNotFound || code == nethttp.StatusGone:
		return failure.New(v1alpha2.ReasonSourceNotFound, "http source %s: not found (%s)", u, status)
	case code == nethttp.StatusUnauthorized || code == nethttp.StatusForbidden:
		return failure.New(v1alpha2.ReasonUnpackFailed, "http source %s: authentication failed (%s)", u, status)
	case code >= 500 || code == nethttp.StatusRequestTimeout || code == nethttp.StatusTooManyRequests:
		return fmt.Errorf("http source %s: server responded %s", u, status)
	}
	return failure.New(v1alpha2.ReasonUnpackFailed, "http source %s: unexpected response %s", u, status)
}

// redact returns the URL raw with any password replaced, for messages.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if strings.Contains(raw, "@") {
			return "(invalid URL)"
		}
		return raw
	}
	return u.Redacted()
}
