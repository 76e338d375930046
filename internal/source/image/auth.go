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
