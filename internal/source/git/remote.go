package git

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"net/url"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	corev1 "k8s.io/api/core/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/source/credentials"
	"github.com/rukpak/rukpak/pkg/failure"
)

// TokenKey is the key of an auth Secret holding a token, used as the
// password of HTTP basic auth (with the username "git" unless the Secret
// has a username too).
const TokenKey = "token"

// tokenUser is the basic-auth username sent with a token alone; servers
// that authenticate by token ignore it, but some refuse an empty one.
const tokenUser = "git"

// remote is a repository with what it takes to reach it, for one
// operation (a resolve or an unpack): every session it opens shares the
// operation's deadline (the context's) and its budget of bytes received.
type remote struct {
	url      string // the clone URL, as the user wrote it
	name     string // the URL without a password, for messages
	auth     transport.AuthMethod
	caBundle []byte
	insecure bool
	ssh      bool

	op       *op
	client   transport.Transport
	proxyURL string // SSH: names op to the dialer of this package
	done     func() // forgets op
}

// connect checks the repository URL and reads the credentials g names.
// Only https, http and ssh URLs (including scp-like user@host:path) are
// accepted: go-git would also read local paths and file:// URLs from the
// manager's own filesystem. The caller must close the remote.
func (s *Source) connect(ctx context.Context, g *v1alpha2.GitSource) (*remote, error) {
	r, err := s.newRemote(ctx, g)
	if err != nil {
		return nil, err
	}
	r.op = &op{repo: r.name, budget: &budget{max: s.maxFetch}}
	if dl, ok := ctx.Deadline(); ok {
		r.op.deadline = dl
	}
	if r.ssh {
		r.proxyURL, r.done = register(r.op)
		r.client, err = client.NewClient(&transport.Endpoint{Protocol: "ssh"})
		if err != nil {
			r.close()
			return nil, fmt.Errorf("%s: %w", r.name, err)
		}
		return r, nil
	}
	r.client = githttp.NewClient(&nethttp.Client{Transport: &budgetTransport{base: r.httpTransport(), b: r.op.budget}})
	return r, nil
}

// close forgets the remote's operation.
func (r *remote) close() {
	if r.done != nil {
		r.done()
	}
}

// httpTransport returns the HTTP transport of the remote: the default
// one's dialer, proxy and timeouts, with the remote's TLS settings. They
// are set here rather than on go-git's endpoint, so that go-git uses this
// transport as it is.
func (r *remote) httpTransport() *nethttp.Transport {
	tr := &nethttp.Transport{Proxy: nethttp.ProxyFromEnvironment}
	if def, ok := nethttp.DefaultTransport.(*nethttp.Transport); ok {
		tr = def.Clone()
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	switch {
	case r.insecure:
		cfg.InsecureSkipVerify = true //nolint:gosec // the user asked for it explicitly (insecureSkipTLSVerify)
	case len(r.caBundle) > 0:
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		pool.AppendCertsFromPEM(r.caBundle)
		cfg.RootCAs = pool
	}
	tr.TLSClientConfig = cfg
	return tr
}

// budgetTransport counts the bodies of responses against a budget.
type budgetTransport struct {
	base nethttp.RoundTripper
	b    *budget
}

func (t *budgetTransport) RoundTrip(req *nethttp.Request) (*nethttp.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &budgetBody{Reader: t.b.reader(resp.Body), Closer: resp.Body}
	return resp, nil
}

type budgetBody struct {
	io.Reader
	io.Closer
}

// newRemote checks the URL of g and reads its credentials.
func (s *Source) newRemote(ctx context.Context, g *v1alpha2.GitSource) (*remote, error) {
	r := &remote{url: g.Repository, name: redact(g.Repository)}
	ep, err := transport.NewEndpoint(g.Repository)
	if err != nil {
		return nil, failure.New(v1alpha2.ReasonUnpackFailed, "repository %q is not a valid URL: %v", r.name, err)
	}
	switch ep.Protocol {
	case "https", "http":
		r.insecure = g.InsecureSkipTLSVerify
		if g.CASecret != nil && !r.insecure {
			if r.caBundle, err = s.caBundle(ctx, g.CASecret); err != nil {
				return nil, err
			}
		}
		if g.Auth != nil {
			if r.auth, err = s.basicAuth(ctx, &g.Auth.Secret); err != nil {
				return nil, err
			}
		}
	case "ssh":
		r.ssh = true
		if g.Auth == nil {
			return nil, failure.New(v1alpha2.ReasonUnpackFailed,
				"repository %s is reached over ssh, which needs auth.secret with the keys %s and %s", r.name, corev1.SSHAuthPrivateKey, KnownHostsKey)
		}
		if r.auth, err = s.sshCredentials(ctx, &g.Auth.Secret, ep); err != nil {
			return nil, err
		}
	default:
		return nil, failure.New(v1alpha2.ReasonUnpackFailed,
			"repository %q: %s URLs are not supported, use https://, http:// or ssh:// (or user@host:path)", r.name, ep.Protocol)
	}
	return r, nil
}

// basicAuth reads username and password (or token) from the Secret ref.
func (s *Source) basicAuth(ctx context.Context, ref *v1alpha2.LocalObjectReference) (*githttp.BasicAuth, error) {
	sec, err := s.creds.Secret(ctx, ref)
	if err != nil {
		return nil, err
	}
	user := string(sec.Data[corev1.BasicAuthUsernameKey])
	pass, ok := sec.Data[corev1.BasicAuthPasswordKey]
	if !ok {
		if pass, ok = sec.Data[TokenKey]; ok && user == "" {
			user = tokenUser
		}
	}
	if !ok {
		return nil, failure.New(v1alpha2.ReasonUnpackFailed, "Secret %s/%s has neither a %s nor a %s key",
			s.creds.Namespace(), ref.Name, corev1.BasicAuthPasswordKey, TokenKey)
	}
	return &githttp.BasicAuth{Username: user, Password: string(pass)}, nil
}

// caBundle reads the PEM certificates under ca.crt of the Secret ref. They
// are trusted in addition to the system roots, as credentials.TLSConfig
// does; go-git takes them as PEM rather than as a tls.Config.
func (s *Source) caBundle(ctx context.Context, ref *v1alpha2.LocalObjectReference) ([]byte, error) {
	sec, err := s.creds.Secret(ctx, ref)
	if err != nil {
		return nil, err
	}
	pem, ok := sec.Data[credentials.CAKey]
	if !ok {
		return nil, failure.New(v1alpha2.ReasonUnpackFailed, "Secret %s/%s has no %s key", s.creds.Namespace(), ref.Name, credentials.CAKey)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(pem) {
		return nil, failure.New(v1alpha2.ReasonUnpackFailed, "Secret %s/%s: %s holds no PEM certificate", s.creds.Namespace(), ref.Name, credentials.CAKey)
	}
	return pem, nil
}

// session opens an upload-pack session; over SSH, that connects.
func (r *remote) session() (transport.UploadPackSession, error) {
	ep, err := transport.NewEndpoint(r.url)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", r.name, err)
	}
	if r.proxyURL != "" {
		ep.Proxy = transport.ProxyOptions{URL: r.proxyURL}
	}
	sess, err := r.client.NewUploadPackSession(ep, r.auth)
	if err != nil {
		return nil, r.classify("connecting to", err)
	}
	return sess, nil
}

// advertise returns the server's references, peeled tags and capabilities
// (one ls-remote).
func (r *remote) advertise(ctx context.Context) (*packp.AdvRefs, error) {
	sess, err := r.session()
	if err != nil {
		return nil, err
	}
	defer func() { _ = sess.Close() }()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return nil, r.classify("listing references of", err)
	}
	return ar, nil
}

// fetch fetches the objects wants (and what they reach) into sto; with
// shallow set, and when the server supports it, only the tips themselves
// (depth 1). The pack goes through sto's checks on its way to disk.
func (r *remote) fetch(ctx context.Context, sto *diskStorage, ar *packp.AdvRefs, shallow bool, wants ...plumbing.Hash) error {
	req := packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
	req.Wants = wants
	if shallow && ar.Capabilities.Supports(capability.Shallow) {
		req.Depth = packp.DepthCommits(1)
		if err := req.Capabilities.Set(capability.Shallow); err != nil {
			return fmt.Errorf("fetching from %s: %w", r.name, err)
		}
	}
	if ar.Capabilities.Supports(capability.NoProgress) {
		if err := req.Capabilities.Set(capability.NoProgress); err != nil {
			return fmt.Errorf("fetching from %s: %w", r.name, err)
		}
	}
	sess, err := r.session()
	if err != nil {
		return err
	}
	defer func() { _ = sess.Close() }()
	resp, err := sess.UploadPack(ctx, req)
	if errors.Is(err, transport.ErrEmptyUploadPackRequest) {
		// Nothing was asked for that is not here already, or the server
		// ended the session without answering.
		return fmt.Errorf("fetching from %s: the server sent no pack", r.name)
	}
	if err != nil {
		return r.classify("fetching from", err)
	}
	defer func() { _ = resp.Close() }()
	var pack io.Reader = resp
	switch {
	case req.Capabilities.Supports(capability.Sideband64k):
		pack = sideband.NewDemuxer(sideband.Sideband64k, resp)
	case req.Capabilities.Supports(capability.Sideband):
		pack = sideband.NewDemuxer(sideband.Sideband, resp)
	}
	if err := packfile.UpdateObjectStorage(sto, pack); err != nil {
		return r.classify("fetching from", err)
	}
	return nil
}

// classify turns the errors retrying cannot fix into terminal failures and
// wraps the others.
func (r *remote) classify(op string, err error) error {
	// Going over the budget cuts the stream short, which go-git and the
	// checks of the pack report in their own words: the budget is the cause.
	if r.op != nil && r.op.budget.exceeded.Load() {
		return r.op.fail(err)
	}
	if f := failure.As(err); f != nil {
		return f
	}
	var hk *hostKeyError
	switch {
	case errors.As(err, &hk):
		return failure.New(v1alpha2.ReasonUnpackFailed, "repository %s: %v", r.name, hk)
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed),
		strings.Contains(err.Error(), "ssh: unable to authenticate"):
		return failure.New(v1alpha2.ReasonUnpackFailed, "authentication failed for %s: %v", r.name, err)
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return failure.New(v1alpha2.ReasonSourceNotFound, "repository %s not found", r.name)
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return failure.New(v1alpha2.ReasonSourceNotFound, "repository %s is empty", r.name)
	}
	return fmt.Errorf("%s %s: %w", op, r.name, err)
}

// redact returns the repository URL without the password it may hold, for
// messages that end up in conditions.
func redact(repo string) string {
	u, err := url.Parse(repo)
	if err != nil || u.User == nil {
		return repo
	}
	return u.Redacted()
}
