package image

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// CallOption changes how one call of a Source reaches a registry. It is
// for sources that read images of their own (an oci:// Helm repository)
// with credentials of another kind than an image source's pull Secret.
type CallOption func(*call)

// call is what the CallOptions of one call set.
type call struct {
	auth *v1alpha2.HTTPAuth
}

// callOf applies opts.
func callOf(opts []CallOption) call {
	var c call
	for _, o := range opts {
		o(&c)
	}
	return c
}

// WithAuth authenticates with the Secret auth names in place of the
// source's pull Secret: a registry token under the key token, or else a
// username and password under the keys username and password, as an http
// source's auth Secret holds them. nil changes nothing.
func WithAuth(auth *v1alpha2.HTTPAuth) CallOption {
	return func(c *call) { c.auth = auth }
}

// credentials returns the authenticator of one call to repo and what an
// authentication failure's message tells to check: the Secret of
// WithAuth when the call has one, else the source's pull Secret.
func (s *Source) credentials(ctx context.Context, img *v1alpha2.ImageSource, cl call, repo name.Repository) (authn.Authenticator, string, error) {
	if cl.auth != nil {
		auth, err := s.secretAuthenticator(ctx, &cl.auth.Secret)
		return auth, "check the auth Secret " + s.creds.Namespace() + "/" + cl.auth.Secret.Name, err
	}
	auth, err := s.authenticator(ctx, img.PullSecret, repo)
	return auth, "check the image's pullSecret", err
}

// secretAuthenticator returns the credentials of the Secret ref names, as
// a registry takes them: a registry token under the key token (sent as a
// bearer token; surrounding whitespace ignored), or else a username and
// password (basic authentication, to the registry's token service or to
// the registry itself, whichever it asks for). A Secret with neither, or
// with a username but no password, is a terminal failure.
func (s *Source) secretAuthenticator(ctx context.Context, ref *v1alpha2.LocalObjectReference) (authn.Authenticator, error) {
	secret, err := s.creds.Secret(ctx, ref)
	if err != nil {
		return nil, err
	}
	key := s.creds.Namespace() + "/" + ref.Name
	token := strings.TrimSpace(string(secret.Data["token"]))
	user, password := string(secret.Data["username"]), string(secret.Data["password"])
	switch {
	case token != "":
		return &authn.Bearer{Token: token}, nil
	case user != "" && password != "":
		return &authn.Basic{Username: user, Password: password}, nil
	case user != "":
		return nil, failure.New(v1alpha2.ReasonUnpackFailed,
			"Secret %s has a username key but no password key: a registry takes both", key)
	}
	return nil, failure.New(v1alpha2.ReasonUnpackFailed, "Secret %s has neither a token key nor a username key", key)
}

// dockerConfig is the content of a kubernetes.io/dockerconfigjson Secret.
// authn.AuthConfig decodes an entry's auth field (base64 of user:password)
// into its username and password.
type dockerConfig struct {
	Auths map[string]authn.AuthConfig `json:"auths"`
}

// authenticator returns the credentials for repo from the pull Secret ref
// names: its entry for repo's registry, anonymous when it has none or when
// there is no pull Secret. A missing Secret, one without a
// .dockerconfigjson key or with an invalid one is a terminal failure.
func (s *Source) authenticator(ctx context.Context, ref *v1alpha2.LocalObjectReference, repo name.Repository) (authn.Authenticator, error) {
	if ref == nil {
		return authn.Anonymous, nil
	}
	secret, err := s.creds.Secret(ctx, ref)
	if err != nil {
		return nil, err
	}
	key := s.creds.Namespace() + "/" + ref.Name
	raw, ok := secret.Data[corev1.DockerConfigJsonKey]
	if !ok {
		return nil, failure.New(v1alpha2.ReasonUnpackFailed,
			"pull Secret %s has no %s key: it must be of type %s", key, corev1.DockerConfigJsonKey, corev1.SecretTypeDockerConfigJson)
	}
	var cfg dockerConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, failure.New(v1alpha2.ReasonUnpackFailed,
			"pull Secret %s: %s is not a valid docker config: %s", key, corev1.DockerConfigJsonKey, describeJSONError(err))
	}
	auth, ok := lookup(cfg.Auths, repo)
	if !ok || auth == (authn.AuthConfig{}) {
		return authn.Anonymous, nil
	}
	return authn.FromConfig(auth), nil
}

// describeJSONError describes a decoding error without quoting the
// document (a syntax error names the offending character, which may be a
// piece of a password).
func describeJSONError(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("invalid JSON at byte %d", se.Offset)
	}
	return err.Error()
}

// lookup returns the entry of auths for repo: the one whose host is repo's
// registry and whose path, if any, is the longest prefix of repo's path.
// Keys may carry a scheme and Docker's API path ("https://index.docker.io/v1/"),
// which are ignored; docker.io and its aliases are one registry.
func lookup(auths map[string]authn.AuthConfig, repo name.Repository) (authn.AuthConfig, bool) {
	host := canonicalHost(repo.RegistryStr())
	path := repo.RepositoryStr()
	var (
		best    authn.AuthConfig
		bestKey string
		bestLen = -1
	)
	for key, cfg := range auths {
		h, p := splitKey(key)
		if h != host || (p != "" && path != p && !strings.HasPrefix(path, p+"/")) {
			continue
		}
		// The longest path wins; ties (keys that differ only in scheme or
		// case) go to the smallest key, so that the choice is stable.
		if len(p) > bestLen || (len(p) == bestLen && key < bestKey) {
			best, bestKey, bestLen = cfg, key, len(p)
		}
	}
	return best, bestLen >= 0
}

// splitKey returns the canonical host and the repository path of a key of
// a docker config's auths.
func splitKey(key string) (host, path string) {
	k := strings.TrimSpace(key)
	for _, scheme := range []string{"https://", "http://"} {
		if len(k) >= len(scheme) && strings.EqualFold(k[:len(scheme)], scheme) {
			k = k[len(scheme):]
			break
		}
	}
	host, path, _ = strings.Cut(k, "/")
	path = strings.Trim(path, "/")
	if path == "v1" || path == "v2" || strings.HasPrefix(path, "v1/") || strings.HasPrefix(path, "v2/") {
		path = "" // Docker's API path, not a repository
	}
	return canonicalHost(host), path
}

// canonicalHost lowercases a registry host and maps Docker Hub's aliases to
// the name go-containerregistry gives it.
func canonicalHost(h string) string {
	h = strings.ToLower(h)
	switch h {
	case "docker.io", "registry-1.docker.io", "index.docker.io":
		return name.DefaultRegistry
	}
	return h
}
