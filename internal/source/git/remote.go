package git

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"strings"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
	corev1 "k8s.io/api/core/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/failure"
	"github.com/rukpak/rukpak/internal/source/credentials"
)

// TokenKey is the key of an auth Secret holding a token, used as the
// password of HTTP basic auth (with the username "git" unless the Secret
// has a username too).
const TokenKey = "token"

// tokenUser is the basic-auth username sent with a token alone; servers
// that authenticate by token ignore it, but some refuse an empty one.
const tokenUser = "git"

// remote is a repository with what it takes to reach it.
type remote struct {
	url      string // the clone URL, as the user wrote it
	name     string // the URL without a password, for messages
	auth     transport.AuthMethod
	caBundle []byte
	insecure bool
}

// connect checks the repository URL and reads the credentials g names.
// Only https, http and ssh URLs (including scp-like user@host:path) are
// accepted: go-git would also read local paths and file:// URLs from the
// manager's own filesystem.
func (s *Source) connect(ctx context.Context, g *v1alpha2.GitSource) (*remote, error) {
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

// advertise returns the server's references, peeled tags and capabilities
// (one ls-remote).
func (r *remote) advertise(ctx context.Context) (*packp.AdvRefs, error) {
	ep, err := transport.NewEndpoint(r.url)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", r.name, err)
	}
	ep.InsecureSkipTLS, ep.CaBundle = r.insecure, r.caBundle
	c, err := client.NewClient(ep)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.name, err)
	}
	sess, err := c.NewUploadPackSession(ep, r.auth)
	if err != nil {
		return nil, r.classify("listing references of", err)
	}
	defer func() { _ = sess.Close() }()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return nil, r.classify("listing references of", err)
	}
	return ar, nil
}

// fetch fetches specs into sto; with shallow set, and when the server
// supports it, only the tips themselves (depth 1).
func (r *remote) fetch(ctx context.Context, sto *memory.Storage, ar *packp.AdvRefs, shallow bool, specs ...config.RefSpec) error {
	depth := 0
	if shallow && ar.Capabilities.Supports(capability.Shallow) {
		depth = 1
	}
	rem := gogit.NewRemote(sto, &config.RemoteConfig{Name: "origin", URLs: []string{r.url}})
	err := rem.FetchContext(ctx, &gogit.FetchOptions{
		RefSpecs:        specs,
		Depth:           depth,
		Auth:            r.auth,
		Tags:            gogit.NoTags,
		InsecureSkipTLS: r.insecure,
		CABundle:        r.caBundle,
	})
	if err != nil && !errors.Is(err, gogit.NoErrAlreadyUpToDate) {
		return r.classify("fetching from", err)
	}
	return r.checkFetched(sto)
}

// checkFetched checks that sto holds the object of every reference
// fetched: go-git may report success when an SSH server quits in the middle
// of a fetch, leaving references to objects it never received.
func (r *remote) checkFetched(sto *memory.Storage) error {
	for name, ref := range sto.ReferenceStorage {
		if ref.Type() != plumbing.HashReference {
			continue
		}
		if err := sto.HasEncodedObject(ref.Hash()); err != nil {
			return fmt.Errorf("fetching from %s: the server did not send %s (%s) completely", r.name, name, ref.Hash())
		}
	}
	return nil
}

// classify turns the errors retrying cannot fix into terminal failures and
// wraps the others.
func (r *remote) classify(op string, err error) error {
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
