//go:build integration

package image

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/archive"
	"github.com/rukpak/rukpak/internal/source/credentials"
	"github.com/rukpak/rukpak/pkg/envtest"
	"github.com/rukpak/rukpak/pkg/failure"
)

var env *envtest.Env

func TestMain(m *testing.M) { envtest.Run(m, &env) }

// transient stands for a wanted error that is not a terminal failure.
const transient = "transient"

const zeroDigest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

type sourceCase struct {
	name string
	reg  regOpts
	// ref and digest of the source: {reg} stands for the registry's host,
	// {repo:tag} for the digest of that fixture.
	ref, digest string
	platform    string
	pullSecret  string // a kind of pullSecret makes: good, good-userpass, wrong, other-registry, invalid, missing
	ca          bool   // set caSecret to the registry's certificate
	insecure    bool
	down        int // the status every request gets once the fixtures are pushed
	limits      *archive.Limits
	// afterResolve runs between Resolve and Unpack; when resolveAgain is
	// set, the spec is then resolved again, to that fixture's digest.
	afterResolve func(t *testing.T, r *testRegistry, f fixtures)
	resolveAgain string

	wantDigest  string // the fixture the pin is the digest of, or a digest
	wantResolve string // reason of a Resolve failure, or transient
	wantUnpack  string // reason of an Unpack failure, or transient
	wantMsg     string // part of the error; {reg} stands for the registry's host
	wantFiles   map[string]string
}

func TestSource(t *testing.T) {
	tests := []sourceCase{
		{name: "ref by digest", ref: "{reg}/bundle@{bundle:v1}", wantDigest: "bundle:v1", wantFiles: layeredFiles},
		{name: "tag resolves to its digest", ref: "{reg}/bundle:v1", wantDigest: "bundle:v1", wantFiles: layeredFiles},
		{name: "digest field pins a tag to what it no longer names", ref: "{reg}/bundle:v2", digest: "{bundle:v1}",
			wantDigest: "bundle:v1", wantFiles: layeredFiles},
		{name: "tag moved to a new digest resolves anew", ref: "{reg}/bundle:v1", wantDigest: "bundle:v1",
			afterResolve: func(t *testing.T, r *testRegistry, f fixtures) { r.push(t, "bundle:v1", f.images["bundle:v2"]) },
			resolveAgain: "bundle:v2", wantFiles: nextFiles},
		{name: "registry without HEAD: GET resolves the tag", reg: regOpts{noHead: true}, ref: "{reg}/multi:latest",
			wantDigest: "multi:latest", wantFiles: map[string]string{"arch.txt": "amd64"}},
		{name: "registry without HEAD: unknown tag", reg: regOpts{noHead: true}, ref: "{reg}/bundle:nope",
			wantResolve: v1alpha2.ReasonSourceNotFound, wantMsg: "(no such tag or manifest)"},
		{name: "malformed digest field", ref: "{reg}/bundle:v1", digest: "sha256:abc",
			wantResolve: v1alpha2.ReasonUnpackFailed, wantMsg: `image digest "sha256:abc" is not of the form`},
		{name: "ref digest and digest field disagree", ref: "{reg}/bundle@{bundle:v1}", digest: "{bundle:v2}",
			wantResolve: v1alpha2.ReasonDigestMismatch, wantMsg: "but the source is pinned to"},
		{name: "index: default platform", ref: "{reg}/multi:latest", wantDigest: "multi:latest",
			wantFiles: map[string]string{"arch.txt": "amd64"}},
		{name: "index: platform linux/arm64 matches variant v8", ref: "{reg}/multi:latest", platform: "linux/arm64",
			wantDigest: "multi:latest", wantFiles: map[string]string{"arch.txt": "arm64"}},
		{name: "index: platform missing", ref: "{reg}/multi@{multi:latest}", platform: "linux/s390x", wantDigest: "multi:latest",
			wantUnpack: v1alpha2.ReasonUnpackFailed, wantMsg: "has no image for platform linux/s390x (it has: linux/amd64, linux/arm64/v8)"},
		{name: "malformed platform", ref: "{reg}/multi:latest", platform: "linux", wantDigest: "multi:latest",
			wantUnpack: v1alpha2.ReasonUnpackFailed, wantMsg: `platform "linux" is not of the form os/arch[/variant]`},
		{name: "Helm chart", ref: "{reg}/chart:1.0.0", wantDigest: "chart:1.0.0",
			wantFiles: map[string]string{"mychart/Chart.yaml": "name: mychart", "mychart/templates/cm.yaml": "kind: ConfigMap"}},
		{name: "uncompressed layer", ref: "{reg}/plain:v1", wantDigest: "plain:v1", wantFiles: map[string]string{"plain.txt": "plain"}},
		{name: "pull secret with auth", reg: regOpts{auth: true}, ref: "{reg}/bundle:v1", pullSecret: "good",
			wantDigest: "bundle:v1", wantFiles: layeredFiles},
		{name: "pull secret with username and password", reg: regOpts{auth: true}, ref: "{reg}/bundle:v1", pullSecret: "good-userpass",
			wantDigest: "bundle:v1", wantFiles: layeredFiles},
		{name: "wrong credentials", reg: regOpts{auth: true}, ref: "{reg}/bundle:v1", pullSecret: "wrong",
			wantResolve: v1alpha2.ReasonUnpackFailed, wantMsg: "authentication failed for {reg} (HTTP 401)"},
		{name: "wrong credentials, pinned", reg: regOpts{auth: true}, ref: "{reg}/bundle@{bundle:v1}", pullSecret: "wrong",
			wantDigest: "bundle:v1", wantUnpack: v1alpha2.ReasonUnpackFailed, wantMsg: "authentication failed for {reg}"},
		{name: "no credentials for the registry", reg: regOpts{auth: true}, ref: "{reg}/bundle:v1", pullSecret: "other-registry",
			wantResolve: v1alpha2.ReasonUnpackFailed, wantMsg: "authentication failed for {reg}"},
		{name: "missing pull secret", ref: "{reg}/bundle:v1", pullSecret: "missing",
			wantResolve: v1alpha2.ReasonSourceNotFound, wantMsg: "not found (source Secrets are read from rukpak-system only)"},
		{name: "invalid pull secret", ref: "{reg}/bundle:v1", pullSecret: "invalid",
			wantResolve: v1alpha2.ReasonUnpackFailed, wantMsg: "is not a valid docker config: invalid JSON at byte"},
		{name: "TLS with CA", reg: regOpts{tls: true}, ref: "{reg}/bundle:v1", ca: true, wantDigest: "bundle:v1", wantFiles: layeredFiles},
		{name: "TLS with CA and auth", reg: regOpts{tls: true, auth: true}, ref: "{reg}/multi:latest", ca: true, pullSecret: "good",
			platform: "linux/arm64", wantDigest: "multi:latest", wantFiles: map[string]string{"arch.txt": "arm64"}},
		{name: "TLS without CA is transient", reg: regOpts{tls: true}, ref: "{reg}/bundle:v1",
			wantResolve: transient, wantMsg: "certificate"},
		{name: "TLS without CA, insecureSkipTLSVerify", reg: regOpts{tls: true}, ref: "{reg}/bundle:v1", insecure: true,
			wantDigest: "bundle:v1", wantFiles: layeredFiles},
		{name: "unknown tag", ref: "{reg}/bundle:nope",
			wantResolve: v1alpha2.ReasonSourceNotFound, wantMsg: "image {reg}/bundle:nope not found in {reg} (no such tag or manifest)"},
		{name: "unknown repository", ref: "{reg}/nothing:v1",
			wantResolve: v1alpha2.ReasonSourceNotFound, wantMsg: "image {reg}/nothing:v1 not found in {reg} (no such repository)"},
		{name: "unknown digest", ref: "{reg}/bundle@" + zeroDigest, wantDigest: zeroDigest, wantUnpack: v1alpha2.ReasonSourceNotFound,
			wantMsg: "image {reg}/bundle@" + zeroDigest + " not found"},
		{name: "unparsable ref", ref: "not a ref",
			wantResolve: v1alpha2.ReasonUnpackFailed, wantMsg: `image ref "not a ref" cannot be parsed`},
		{name: "registry serves another manifest", ref: "{reg}/bundle:v1", wantDigest: "bundle:v1",
			afterResolve: func(_ *testing.T, r *testRegistry, f fixtures) {
				r.serveInstead(f.digests["bundle:v1"], f.digests["bundle:v2"])
			},
			wantUnpack: v1alpha2.ReasonDigestMismatch, wantMsg: "image {reg}/bundle:v1@{bundle:v1}: the registry served content that does not match the digest"},
		{name: "registry serves another layer", ref: "{reg}/bundle:v1", wantDigest: "bundle:v1",
			afterResolve: func(_ *testing.T, r *testRegistry, f fixtures) {
				r.serveInstead(f.layers["bundle:v1"][1], f.layers["bundle:v2"][0])
			},
			wantUnpack: v1alpha2.ReasonDigestMismatch, wantMsg: "layer 2 of 2 of image {reg}/bundle:v1@"},
		{name: "registry down is transient", ref: "{reg}/bundle:v1", down: 503, wantResolve: transient, wantMsg: "503"},
		{name: "registry down while unpacking is transient", ref: "{reg}/bundle@{bundle:v1}", down: 503,
			wantDigest: "bundle:v1", wantUnpack: transient, wantMsg: "503"},
		{name: "limits bound the whole image, not each layer", ref: "{reg}/bundle:v1", limits: &archive.Limits{MaxBytes: 20},
			wantDigest: "bundle:v1", wantUnpack: v1alpha2.ReasonUnpackFailed, wantMsg: "layer 2 of 2 of image"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runCase(t, tt) })
	}
}

func runCase(t *testing.T, tt sourceCase) {
	ctx := context.Background()
	r := newRegistry(t, tt.reg)
	f := pushFixtures(t, r)
	r.status.Store(int32(tt.down))
	r.noHead.Store(tt.reg.noHead)
	expand := func(s string) string {
		s = strings.ReplaceAll(s, "{reg}", r.host)
		for tag, d := range f.digests {
			s = strings.ReplaceAll(s, "{"+tag+"}", d)
		}
		return s
	}
	src := v1alpha2.BundleSource{Type: v1alpha2.SourceTypeImage, Image: &v1alpha2.ImageSource{
		Ref: expand(tt.ref), Digest: expand(tt.digest), Platform: tt.platform, InsecureSkipTLSVerify: tt.insecure,
	}}
	if tt.pullSecret != "" {
		src.Image.PullSecret = &v1alpha2.LocalObjectReference{Name: pullSecret(t, r, tt.pullSecret)}
	}
	if tt.ca {
		src.Image.CASecret = &v1alpha2.LocalObjectReference{Name: caSecret(t, r)}
	}
	s := testSource(tt.limits)
	msg := expand(tt.wantMsg)

	pinned := resolve(t, s, r, src)
	if tt.wantResolve != "" {
		checkErr(t, "Resolve", pinned.err, tt.wantResolve, msg)
		return
	}
	if pinned.err != nil {
		t.Fatalf("Resolve: %v", pinned.err)
	}
	checkPin(t, pinned.src, f.pin(tt.wantDigest))
	again := resolve(t, s, r, pinned.src)
	if again.err != nil || again.src.Image.Digest != pinned.src.Image.Digest {
		t.Fatalf("Resolve of the pinned source = %v, %v", again.src.Image, again.err)
	}
	if tt.afterResolve != nil {
		tt.afterResolve(t, r, f)
	}
	if tt.resolveAgain != "" {
		pinned = resolve(t, s, r, src)
		if pinned.err != nil {
			t.Fatalf("second Resolve: %v", pinned.err)
		}
		checkPin(t, pinned.src, f.pin(tt.resolveAgain))
	}

	dir := t.TempDir()
	err := s.Unpack(ctx, pinned.src, dir)
	if tt.wantUnpack != "" {
		checkErr(t, "Unpack", err, tt.wantUnpack, msg)
		return
	}
	if err != nil {
		t.Fatalf("Unpack: %v", err)
	}
	if got := readFiles(t, dir); !maps.Equal(got, tt.wantFiles) {
		t.Fatalf("files = %v, want %v", got, tt.wantFiles)
	}
}

// testSource returns a Source whose default platform is linux/amd64 and
// that does not wait long before retrying.
func testSource(limits *archive.Limits) *Source {
	opts := []Option{WithPlatform("linux/amd64")}
	if limits != nil {
		opts = append(opts, WithLimits(*limits))
	}
	s := New(credentials.NewReader(env.Client, v1alpha2.SystemNamespace), opts...)
	s.backoff = remote.Backoff{Duration: 10 * time.Millisecond, Factor: 1, Steps: 2}
	return s
}

type resolved struct {
	src v1alpha2.BundleSource
	err error
}

// resolve resolves src, checking that Resolve leaves src alone and that it
// sends no request to the registry unless src is floating.
func resolve(t *testing.T, s *Source, r *testRegistry, src v1alpha2.BundleSource) resolved {
	t.Helper()
	before, in := r.requests.Load(), src.DeepCopy()
	floating := s.Floating(src)
	out, err := s.Resolve(context.Background(), src)
	if n := r.requests.Load() - before; !floating && n != 0 {
		t.Errorf("Resolve of a pinned source sent %d requests to the registry", n)
	}
	if !reflect.DeepEqual(in, &src) {
		t.Error("Resolve modified its argument")
	}
	return resolved{src: out, err: err}
}

func checkPin(t *testing.T, src v1alpha2.BundleSource, want string) {
	t.Helper()
	if want == "" || src.Image.Digest != want {
		t.Fatalf("pinned digest = %q, want %q", src.Image.Digest, want)
	}
}

func checkErr(t *testing.T, op string, err error, reason, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s succeeded, want a %s error", op, reason)
	}
	t.Logf("%s: %v", op, err)
	got := failure.Reason(err, transient)
	if got != reason {
		t.Fatalf("%s: reason %q, want %q (error %v)", op, got, reason, err)
	}
	if !strings.Contains(err.Error(), msg) {
		t.Fatalf("%s error %q does not contain %q", op, err, msg)
	}
	for _, secret := range []string{testPassword, wrongPassword, base64.StdEncoding.EncodeToString([]byte(testUser + ":" + wrongPassword))} {
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("%s error %q contains a credential", op, err)
		}
	}
}

// pullSecret creates a pull Secret of the given kind for r in
// rukpak-system and returns its name ("missing" creates none).
func pullSecret(t *testing.T, r *testRegistry, kind string) string {
	t.Helper()
	basic := func(user, pass string) string { return base64.StdEncoding.EncodeToString([]byte(user + ":" + pass)) }
	typ := corev1.SecretTypeDockerConfigJson
	var config string
	switch kind {
	case "missing":
		return envtest.UniqueName("missing")
	case "good":
		config = `{"auths":{"` + r.host + `":{"auth":"` + basic(testUser, testPassword) + `"}}}`
	case "good-userpass": // a scheme and an API path, as docker login writes them for Docker Hub
		config = `{"auths":{"https://` + r.host + `/v1/":{"username":"` + testUser + `","password":"` + testPassword + `"}}}`
	case "wrong":
		config = `{"auths":{"` + r.host + `":{"auth":"` + basic(testUser, wrongPassword) + `"}}}`
	case "other-registry":
		config = `{"auths":{"registry.example.com":{"auth":"` + basic(testUser, testPassword) + `"}}}`
	case "invalid": // the API server refuses invalid JSON in a dockerconfigjson Secret
		typ, config = corev1.SecretTypeOpaque, `{"auths":{"x":`+testPassword+`}}`
	default:
		t.Fatalf("unknown pull secret kind %q", kind)
	}
	return createSecret(t, typ, corev1.DockerConfigJsonKey, config)
}

// caSecret creates a Secret holding the certificate of r's TLS server.
func caSecret(t *testing.T, r *testRegistry) string {
	t.Helper()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw})
	return createSecret(t, corev1.SecretTypeOpaque, credentials.CAKey, string(ca))
}

func createSecret(t *testing.T, typ corev1.SecretType, key, value string) string {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("secret"), Namespace: v1alpha2.SystemNamespace},
		Type:       typ,
		Data:       map[string][]byte{key: []byte(value)},
	}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatalf("creating Secret: %v", err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), s) })
	return s.Name
}

// readFiles returns the content of every file under root by slash path.
func readFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		b, err := os.ReadFile(p)
		got[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}
