//go:build integration

package helmrepository

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	nethttp "net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	corev1 "k8s.io/api/core/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/versionrange"
	"github.com/rukpak/rukpak/pkg/failure"
)

// ociRegistry is an in-memory OCI registry (go-containerregistry's) on
// loopback, over plain HTTP, that requires authentication and counts the
// tag listings it answers. It takes basic auth, or, with tokens, bearer
// tokens only, as Docker's token authentication has it: its own token
// service (/token, on the registry's host) issues ociIssuedToken for basic
// auth, and ociRegistryToken is a token it takes as it is.
type ociRegistry struct {
	host     string
	handler  nethttp.Handler
	tokens   bool
	listings atomic.Int64
}

const (
	ociUser, ociPassword = "puller", "s3cret-pa55"
	ociIssuedToken       = "issued-t0ken"
	ociRegistryToken     = "registry-t0ken"
)

func newOCIRegistry(t *testing.T) *ociRegistry { return startOCIRegistry(t, false) }

// newTokenRegistry is an ociRegistry with token authentication.
func newTokenRegistry(t *testing.T) *ociRegistry { return startOCIRegistry(t, true) }

func startOCIRegistry(t *testing.T, tokens bool) *ociRegistry {
	t.Helper()
	r := &ociRegistry{handler: registry.New(registry.Logger(log.New(io.Discard, "", 0))), tokens: tokens}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	r.host = strings.TrimPrefix(srv.URL, "http://")
	return r
}

// ServeHTTP checks the credentials, counts tag listings and passes the
// request to the registry; with tokens, it serves the token service too.
func (r *ociRegistry) ServeHTTP(w nethttp.ResponseWriter, req *nethttp.Request) {
	basic := func() bool { u, p, ok := req.BasicAuth(); return ok && u == ociUser && p == ociPassword }
	if r.tokens && req.URL.Path == "/token" {
		if !basic() {
			nethttp.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"wrong username or password"}]}`, nethttp.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"token":"`+ociIssuedToken+`"}`)
		return
	}
	authorized := basic()
	challenge := `Basic realm="test"`
	if r.tokens {
		bearer := req.Header.Get("Authorization")
		authorized = bearer == "Bearer "+ociIssuedToken || bearer == "Bearer "+ociRegistryToken
		challenge = `Bearer realm="http://` + req.Host + `/token",service="test-registry"`
	}
	if !authorized {
		w.Header().Set("WWW-Authenticate", challenge)
		nethttp.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, nethttp.StatusUnauthorized)
		return
	}
	if strings.HasSuffix(req.URL.Path, "/tags/list") {
		r.listings.Add(1)
	}
	r.handler.ServeHTTP(w, req)
}

// push pushes img as repoTag of r and returns its digest.
func (r *ociRegistry) push(t *testing.T, repoTag string, img v1.Image) string {
	t.Helper()
	ref, err := name.ParseReference(r.host+"/"+repoTag, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	auth := remote.WithAuth(&authn.Basic{Username: ociUser, Password: ociPassword})
	if err := remote.Write(ref, img, auth); err != nil {
		t.Fatalf("pushing %s: %v", repoTag, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// pushChart pushes the greeter chart at version as helm push does: a
// config of Helm's media type, one layer holding the chart's .tgz, the
// tag the version with "+" written "_". It returns the digest.
func (r *ociRegistry) pushChart(t *testing.T, version string) string {
	t.Helper()
	layer := static.NewLayer(chartArchive(t, version), "application/vnd.cncf.helm.chart.content.v1.tar+gzip")
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{Layer: layer})
	if err != nil {
		t.Fatal(err)
	}
	img = mutate.ConfigMediaType(img, "application/vnd.cncf.helm.config.v1+json")
	return r.push(t, "charts/greeter:"+OCITag(version), img)
}

// sign pushes a cosign signature of digest, made with key, to the
// chart's sha256-<hex>.sig tag, as `cosign sign --key` does.
func (r *ociRegistry) sign(t *testing.T, digest string, key signature.Signer) {
	t.Helper()
	payload := fmt.Sprintf(`{"critical":{"identity":{"docker-reference":%q},"image":{"docker-manifest-digest":%q},"type":"cosign container image signature"},"optional":null}`,
		r.host+"/charts/greeter", digest)
	sig, err := key.SignMessage(strings.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	layer := static.NewLayer([]byte(payload), "application/vnd.dev.cosign.simplesigning.v1+json")
	img, err := mutate.Append(empty.Image, mutate.Addendum{Layer: layer, Annotations: map[string]string{
		"dev.cosignproject.cosign/signature": base64.StdEncoding.EncodeToString(sig),
	}})
	if err != nil {
		t.Fatal(err)
	}
	r.push(t, "charts/greeter:"+strings.Replace(digest, ":", "-", 1)+".sig", img)
}

// pullSecret is a dockerconfigjson Secret for r with user and password.
func (r *ociRegistry) pullSecret(t *testing.T, user, password string) *v1alpha2.LocalObjectReference {
	t.Helper()
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	return typedSecret(t, corev1.SecretTypeDockerConfigJson, map[string]string{
		corev1.DockerConfigJsonKey: `{"auths":{"` + r.host + `":{"auth":"` + auth + `"}}}`})
}

// newCosignKey returns a signer and a Secret holding its public key.
func newCosignKey(t *testing.T) (signature.Signer, *v1alpha2.LocalObjectReference) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := signature.LoadECDSASignerVerifier(priv, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := cryptoutils.MarshalPublicKeyToPEM(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	return signer, typedSecret(t, corev1.SecretTypeOpaque, map[string]string{"cosign.pub": string(pem)})
}

// ociSource is a source of the greeter chart of r's charts repository.
func ociSource(r *ociRegistry, version string, pull *v1alpha2.LocalObjectReference) v1alpha2.BundleSource {
	return v1alpha2.BundleSource{Type: v1alpha2.SourceTypeHelmRepository, HelmRepository: &v1alpha2.HelmRepositorySource{
		URL: OCIScheme + r.host + "/charts", Chart: "greeter", Version: version, PullSecret: pull, InsecureSkipTLSVerify: true}}
}

func TestOCIResolveAndUnpackFollowARange(t *testing.T) {
	ctx := context.Background()
	r := newOCIRegistry(t)
	digests := map[string]string{}
	for _, v := range []string{"1.0.0", "1.2.0+build.1", "1.3.0-rc.1", "2.0.0"} {
		digests[v] = r.pushChart(t, v)
	}
	r.push(t, "charts/greeter:latest", empty.Image)
	pull := r.pullSecret(t, ociUser, ociPassword)
	s := newSource(WithWorkDir(t.TempDir()))

	tests := []struct {
		name, version string
		publish       string // pushed before resolving
		want, tag     string
		listings      int64 // tag listings the resolve makes
	}{
		{name: "a range takes the newest in it, build metadata from the tag", version: "1.x", want: "1.2.0+build.1", tag: "1.2.0_build.1", listings: 1},
		{name: "a newer version published is followed", version: "1.x", publish: "1.4.0", want: "1.4.0", tag: "1.4.0", listings: 1},
		{name: "a pre-release only when the range names one", version: ">=1.3.0-0 <1.4.0", want: "1.3.0-rc.1", tag: "1.3.0-rc.1", listings: 1},
		{name: "no version is the newest that is not a pre-release", want: "2.0.0", tag: "2.0.0", listings: 1},
		{name: "an exact version is looked up without listing", version: "1.0.0", want: "1.0.0", tag: "1.0.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.publish != "" {
				digests[tt.publish] = r.pushChart(t, tt.publish)
			}
			before := r.listings.Load()
			pinned, err := s.Resolve(ctx, ociSource(r, tt.version, pull))
			if err != nil {
				t.Fatal(err)
			}
			h := pinned.HelmRepository
			wantURL := OCIScheme + r.host + "/charts/greeter:" + tt.tag
			if h.ResolvedVersion != tt.want || h.ResolvedURL != wantURL || "sha256:"+h.SHA256 != digests[tt.want] {
				t.Fatalf("pinned to %s %s %s, want %s %s %s", h.ResolvedVersion, h.ResolvedURL, h.SHA256, tt.want, wantURL, digests[tt.want])
			}
			if got := r.listings.Load() - before; got != tt.listings {
				t.Errorf("%d tag listings, want %d", got, tt.listings)
			}
			dir := t.TempDir()
			if err := s.Unpack(ctx, pinned, dir); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(dir, "greeter", "Chart.yaml"))
			if err != nil || !strings.Contains(string(b), "version: "+tt.want) {
				t.Fatalf("Chart.yaml = %q, %v; want version %s", b, err, tt.want)
			}
		})
	}
}

func TestOCICosign(t *testing.T) {
	ctx := context.Background()
	r := newOCIRegistry(t)
	signed := r.pushChart(t, "1.0.0")
	r.pushChart(t, "1.1.0") // not signed
	key, pub := newCosignKey(t)
	r.sign(t, signed, key)
	pull := r.pullSecret(t, ociUser, ociPassword)
	s := newSource(WithWorkDir(t.TempDir()))
	tests := []struct {
		version string
		reason  string // "" means unpacked
	}{
		{version: "1.0.0"},
		{version: "1.1.0", reason: v1alpha2.ReasonSignatureInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			src := ociSource(r, tt.version, pull)
			src.HelmRepository.Verify = &v1alpha2.HelmRepositoryVerification{Cosign: &v1alpha2.CosignVerification{PublicKeySecret: pub}}
			pinned, err := s.Resolve(ctx, src)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			err = s.Unpack(ctx, pinned, dir)
			if tt.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if f := failure.As(err); f == nil || f.Reason != tt.reason {
				t.Fatalf("error = %v, want %s", err, tt.reason)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Fatalf("%d entries unpacked from an unsigned chart", len(entries))
			}
		})
	}
}

func TestOCIRefusals(t *testing.T) {
	ctx := context.Background()
	r := newOCIRegistry(t)
	r.pushChart(t, "1.0.0")
	notAChart, err := mutate.Append(empty.Image, mutate.Addendum{Layer: static.NewLayer(chartArchive(t, "1.5.0"), types.DockerLayer)})
	if err != nil {
		t.Fatal(err)
	}
	r.push(t, "charts/greeter:1.5.0", notAChart)
	good := r.pullSecret(t, ociUser, ociPassword)
	wrong := r.pullSecret(t, ociUser, "wr0ng")
	s := newSource(WithWorkDir(t.TempDir()))
	tests := []struct {
		name   string
		src    func() v1alpha2.BundleSource
		reason string
		msg    string
		unpack bool // the failure is Unpack's
	}{
		{name: "nothing in range", src: func() v1alpha2.BundleSource { return ociSource(r, "2.x", good) },
			reason: v1alpha2.ReasonSourceNotFound, msg: `chart "greeter" has no version in "2.x" (2 tags published)`},
		{name: "an exact version not published", src: func() v1alpha2.BundleSource { return ociSource(r, "1.0.1", good) },
			reason: v1alpha2.ReasonSourceNotFound, msg: "1.0.1"},
		{name: "a wrong password", src: func() v1alpha2.BundleSource { return ociSource(r, "1.x", wrong) },
			reason: v1alpha2.ReasonUnpackFailed, msg: "authentication failed for " + r.host},
		{name: "no pull secret", src: func() v1alpha2.BundleSource { return ociSource(r, "1.0.0", nil) },
			reason: v1alpha2.ReasonUnpackFailed, msg: "authentication failed for " + r.host},
		{name: "an image that is not a chart", src: func() v1alpha2.BundleSource { return ociSource(r, "1.5.0", good) },
			reason: v1alpha2.ReasonUnpackFailed, msg: "is not a Helm chart", unpack: true},
		{name: "a pin in another repository", src: func() v1alpha2.BundleSource {
			src := ociSource(r, "1.0.0", good)
			src.HelmRepository.ResolvedVersion, src.HelmRepository.ResolvedURL = "1.0.0", OCIScheme+r.host+"/other/greeter:1.0.0"
			src.HelmRepository.SHA256 = strings.Repeat("a", 64)
			return src
		}, reason: v1alpha2.ReasonUnpackFailed, msg: "is not a tag of", unpack: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pinned, err := s.Resolve(ctx, tt.src())
			if tt.unpack {
				if err != nil {
					t.Fatal(err)
				}
				err = s.Unpack(ctx, pinned, t.TempDir())
			}
			f := failure.As(err)
			if f == nil || f.Reason != tt.reason || !strings.Contains(f.Message, tt.msg) {
				t.Fatalf("error = %v, want %s holding %q", err, tt.reason, tt.msg)
			}
		})
	}
}

// TestOCIAuth: an oci:// repository's auth Secret is the registry's
// credentials, username and password (basic auth to the registry, or to
// its token service) or a registry token, sent to it in place of a pull
// secret; credentials the registry refuses fail as a pull secret's do.
// One Source answers every case in order: nothing one case's credentials
// fetched answers another's (the oci:// path keeps no cache).
func TestOCIAuth(t *testing.T) {
	ctx := context.Background()
	basicReg, tokenReg := newOCIRegistry(t), newTokenRegistry(t)
	for _, r := range []*ociRegistry{basicReg, tokenReg} {
		r.pushChart(t, "1.0.0")
		r.pushChart(t, "1.1.0")
	}
	good := secret(t, map[string]string{"username": ociUser, "password": ociPassword})
	wrong := secret(t, map[string]string{"username": ociUser, "password": "wr0ng"})
	token := secret(t, map[string]string{"token": ociRegistryToken + "\n"})
	wrongToken := secret(t, map[string]string{"token": "n0t-a-token"})
	noPassword := secret(t, map[string]string{"username": ociUser})
	neither := secret(t, map[string]string{"user": ociUser})
	missing := &v1alpha2.LocalObjectReference{Name: "no-such-secret"}
	authFailed := func(r *ociRegistry, s *v1alpha2.LocalObjectReference) string {
		return "authentication failed for " + r.host + " (HTTP 401): check the auth Secret " + v1alpha2.SystemNamespace + "/" + s.Name
	}
	s := newSource(WithWorkDir(t.TempDir()))
	tests := []struct {
		name    string
		reg     *ociRegistry
		version string
		auth    *v1alpha2.LocalObjectReference
		want    string // the version unpacked; "" when resolving fails
		reason  string
		msg     string
	}{
		{name: "basic auth: a range", reg: basicReg, version: "1.x", auth: good, want: "1.1.0"},
		{name: "basic auth: an exact version", reg: basicReg, version: "1.0.0", auth: good, want: "1.0.0"},
		{name: "basic auth: a wrong password", reg: basicReg, version: "1.x", auth: wrong,
			reason: v1alpha2.ReasonUnpackFailed, msg: authFailed(basicReg, wrong)},
		{name: "basic auth: a wrong password, an exact version", reg: basicReg, version: "1.0.0", auth: wrong,
			reason: v1alpha2.ReasonUnpackFailed, msg: authFailed(basicReg, wrong)},
		{name: "basic auth: none", reg: basicReg, version: "1.x",
			reason: v1alpha2.ReasonUnpackFailed, msg: "authentication failed for " + basicReg.host + " (HTTP 401)"},
		{name: "token service: username and password", reg: tokenReg, version: "1.x", auth: good, want: "1.1.0"},
		{name: "token service: a registry token", reg: tokenReg, version: "1.x", auth: token, want: "1.1.0"},
		{name: "token service: a wrong password", reg: tokenReg, version: "1.x", auth: wrong,
			reason: v1alpha2.ReasonUnpackFailed, msg: authFailed(tokenReg, wrong)},
		{name: "token service: a wrong token", reg: tokenReg, version: "1.0.0", auth: wrongToken,
			reason: v1alpha2.ReasonUnpackFailed, msg: authFailed(tokenReg, wrongToken)},
		{name: "token service: none", reg: tokenReg, version: "1.x",
			reason: v1alpha2.ReasonUnpackFailed, msg: "authentication failed for " + tokenReg.host},
		{name: "a username without a password", reg: basicReg, version: "1.x", auth: noPassword,
			reason: v1alpha2.ReasonUnpackFailed, msg: "has a username key but no password key"},
		{name: "neither a token nor a username", reg: basicReg, version: "1.x", auth: neither,
			reason: v1alpha2.ReasonUnpackFailed, msg: "has neither a token key nor a username key"},
		{name: "a missing Secret", reg: basicReg, version: "1.x", auth: missing,
			reason: v1alpha2.ReasonSourceNotFound, msg: "Secret " + v1alpha2.SystemNamespace + "/no-such-secret not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := ociSource(tt.reg, tt.version, nil)
			if tt.auth != nil {
				src.HelmRepository.Auth = &v1alpha2.HTTPAuth{Secret: *tt.auth}
			}
			pinned, err := s.Resolve(ctx, src)
			if tt.want == "" {
				f := failure.As(err)
				if f == nil || f.Reason != tt.reason || !strings.Contains(f.Message, tt.msg) {
					t.Fatalf("error = %v, want %s holding %q", err, tt.reason, tt.msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := pinned.HelmRepository.ResolvedVersion; got != tt.want {
				t.Fatalf("resolved %s, want %s", got, tt.want)
			}
			dir := t.TempDir()
			if err := s.Unpack(ctx, pinned, dir); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(dir, "greeter", "Chart.yaml"))
			if err != nil || !strings.Contains(string(b), "version: "+tt.want) {
				t.Fatalf("Chart.yaml = %q, %v; want version %s", b, err, tt.want)
			}
		})
	}
}

// TestOCIAuthUnpackWithTheSpecsCredentials: a pinned chart is pulled with
// the credentials of the spec it is unpacked for, not those it was
// resolved with.
func TestOCIAuthUnpackWithTheSpecsCredentials(t *testing.T) {
	ctx := context.Background()
	r := newTokenRegistry(t)
	r.pushChart(t, "1.0.0")
	good := secret(t, map[string]string{"username": ociUser, "password": ociPassword})
	wrong := secret(t, map[string]string{"username": ociUser, "password": "wr0ng"})
	s := newSource(WithWorkDir(t.TempDir()))
	src := ociSource(r, "1.0.0", nil)
	src.HelmRepository.Auth = &v1alpha2.HTTPAuth{Secret: *good}
	pinned, err := s.Resolve(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	pinned.HelmRepository.Auth = &v1alpha2.HTTPAuth{Secret: *wrong}
	err = s.Unpack(ctx, pinned, t.TempDir())
	if f := failure.As(err); f == nil || f.Reason != v1alpha2.ReasonUnpackFailed || !strings.Contains(f.Message, "authentication failed for "+r.host) {
		t.Fatalf("error = %v, want UnpackFailed: authentication failed", err)
	}
}

// TestNewestTag: tags are read as chart versions with "_" for "+".
func TestNewestTag(t *testing.T) {
	tests := []struct {
		tags                 []string
		constraint           string
		wantTag, wantVersion string
	}{
		{tags: []string{"1.0.0", "1.0.0_2", "latest"}, constraint: "1.x", wantTag: "1.0.0_2", wantVersion: "1.0.0+2"},
		{tags: []string{"v1.1.0", "1.0.0"}, constraint: "~1.0", wantTag: "1.0.0", wantVersion: "1.0.0"},
		{tags: []string{"2.0.0-rc.1", "1.9.0"}, constraint: "*", wantTag: "1.9.0", wantVersion: "1.9.0"},
		{tags: []string{"latest"}, constraint: "*"},
	}
	for _, tt := range tests {
		t.Run(tt.constraint+strings.Join(tt.tags, ","), func(t *testing.T) {
			r, err := versionrange.Parse(tt.constraint)
			if err != nil {
				t.Fatal(err)
			}
			tag, version, ok := NewestTag(tt.tags, r)
			if tag != tt.wantTag || version != tt.wantVersion || ok != (tt.wantTag != "") {
				t.Fatalf("NewestTag = %q %q %v, want %q %q", tag, version, ok, tt.wantTag, tt.wantVersion)
			}
		})
	}
}
