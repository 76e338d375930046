package image

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// conn is what one Resolve or Unpack call needs to reach a repository:
// credentials, TLS settings and a transport of its own.
type conn struct {
	subject   string // what messages name: "image REF[@DIGEST]", "blob DIGEST"
	check     string // what an authentication failure's message tells to check
	repo      name.Repository
	opts      []remote.Option
	transport *http.Transport
}

// connect reads the source's CA Secret and its pull Secret (or the
// credentials of cl) and returns a conn to the repository of ref, whose
// errors name subject.
func (s *Source) connect(ctx context.Context, img *v1alpha2.ImageSource, cl call, ref name.Reference, subject string) (*conn, error) {
	tlsConfig, err := s.creds.TLSConfig(ctx, img.CASecret, img.InsecureSkipTLSVerify)
	if err != nil {
		return nil, err
	}
	auth, check, err := s.credentials(ctx, img, cl, ref.Context())
	if err != nil {
		return nil, err
	}
	tr := newTransport(tlsConfig)
	return &conn{
		subject:   subject,
		check:     check,
		repo:      ref.Context(),
		transport: tr,
		opts: []remote.Option{
			remote.WithContext(ctx),
			remote.WithTransport(tr),
			remote.WithAuth(auth),
			remote.WithRetryBackoff(s.backoff),
		},
	}, nil
}

// close releases the conn's idle connections.
func (c *conn) close() { c.transport.CloseIdleConnections() }

// about returns c with errors naming subject instead.
func (c *conn) about(subject string) *conn {
	cc := *c
	cc.subject = subject
	return &cc
}

// newTransport returns an HTTP transport like go-containerregistry's
// default one, with cfg for TLS.
func newTransport(cfg *tls.Config) *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		TLSClientConfig:       cfg,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: time.Minute,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// resolve returns the digest of the manifest or index the tag ref points
// to, with a HEAD request, or a GET when HEAD fails in a way GET may not.
func (c *conn) resolve(ref name.Reference) (string, error) {
	desc, err := remote.Head(ref, c.opts...)
	if err == nil {
		return desc.Digest.String(), nil
	}
	if !headUnsupported(err) {
		return "", c.classify(err, "looking up")
	}
	d, err := remote.Get(ref, c.opts...)
	if err != nil {
		return "", c.classify(err, "looking up")
	}
	return d.Digest.String(), nil
}

// headUnsupported reports whether a failed HEAD is worth a GET: the
// registry answered, but not with an authentication failure or a server
// error (HEAD not allowed, headers missing, no body to say why it is 404).
func headUnsupported(err error) bool {
	var ue *url.Error
	if errors.As(err, &ue) {
		return false // network, TLS or cancellation: GET fails alike
	}
	var te *transport.Error
	if errors.As(err, &te) {
		return te.StatusCode != http.StatusUnauthorized && te.StatusCode != http.StatusForbidden &&
			te.StatusCode < http.StatusInternalServerError
	}
	return true
}

// image fetches repository@pin, verifies it against pin and returns it, or
// its image for platform when it is an index.
func (c *conn) image(pin string, platform v1.Platform) (v1.Image, error) {
	ref := c.repo.Digest(pin)
	desc, err := remote.Get(ref, c.opts...)
	if err != nil {
		return nil, c.classify(err, "fetching")
	}
	if got := desc.Digest.String(); got != pin {
		return nil, failure.New(v1alpha2.ReasonDigestMismatch,
			"%s: the registry served manifest %s for the pinned digest %s", c.subject, got, pin)
	}
	switch mt := desc.MediaType; {
	case mt.IsSchema1():
		return nil, failure.New(v1alpha2.ReasonUnpackFailed, "%s is a Docker schema 1 image, which is not supported", c.subject)
	case mt.IsIndex():
		idx, err := desc.ImageIndex()
		if err != nil {
			return nil, c.classify(err, "reading")
		}
		d, err := selectImage(idx, platform, c.subject)
		if err != nil {
			return nil, c.classify(err, "reading")
		}
		img, err := idx.Image(d)
		if err != nil {
			return nil, c.classify(err, "fetching the "+formatPlatform(platform)+" image of")
		}
		return img, nil
	default:
		img, err := desc.Image()
		if err != nil {
			return nil, c.classify(err, "reading")
		}
		return img, nil
	}
}

// classify turns a registry error into a terminal failure when retrying
// cannot help (authentication refused, not found, digest mismatch) and
// wraps it, as a transient error, otherwise. Messages name the registry
// and ref, never credentials.
func (c *conn) classify(err error, doing string) error {
	if failure.As(err) != nil {
		return err
	}
	if contentMismatch(err) {
		return failure.New(v1alpha2.ReasonDigestMismatch,
			"%s: the registry served content that does not match the digest it was asked for", c.subject)
	}
	var te *transport.Error
	if errors.As(err, &te) {
		switch {
		case te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden ||
			hasCode(te, transport.UnauthorizedErrorCode, transport.DeniedErrorCode):
			return failure.New(v1alpha2.ReasonUnpackFailed, "authentication failed for %s (HTTP %d): %s",
				c.repo.RegistryStr(), te.StatusCode, c.check)
		case te.StatusCode == http.StatusNotFound ||
			hasCode(te, transport.ManifestUnknownErrorCode, transport.NameUnknownErrorCode, transport.BlobUnknownErrorCode):
			return failure.New(v1alpha2.ReasonSourceNotFound, "%s not found in %s (%s)",
				c.subject, c.repo.RegistryStr(), notFoundDetail(te))
		}
	}
	return fmt.Errorf("%s %s: %w", doing, c.subject, err)
}

// contentMismatch reports whether err is go-containerregistry's report of
// a manifest or blob that does not match its digest or size. It has no
// type of its own for them, so they are told by their messages.
func contentMismatch(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "does not match requested digest") || // manifest by digest
		strings.Contains(msg, "does not match expected size") || // blob Content-Length
		strings.Contains(msg, "error verifying") // blob digest or size, at its end
}

// hasCode reports whether te carries one of codes.
func hasCode(te *transport.Error, codes ...transport.ErrorCode) bool {
	for _, d := range te.Errors {
		for _, c := range codes {
			if d.Code == c {
				return true
			}
		}
	}
	return false
}

// notFoundDetail says what was not found, from the registry's error codes.
func notFoundDetail(te *transport.Error) string {
	switch {
	case hasCode(te, transport.NameUnknownErrorCode):
		return "no such repository"
	case hasCode(te, transport.ManifestUnknownErrorCode):
		return "no such tag or manifest"
	case hasCode(te, transport.BlobUnknownErrorCode):
		return "a blob of the image is missing"
	default:
		return "HTTP 404"
	}
}
