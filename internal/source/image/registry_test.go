package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
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
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Credentials of registries with basic auth.
const (
	testUser      = "puller"
	testPassword  = "s3cret-pa55"
	wrongPassword = "wr0ng-pa55"
)

// regOpts configures a test registry.
type regOpts struct {
	tls  bool // serve HTTPS with httptest's own certificate
	auth bool // require basic auth with testUser and testPassword
	// noHead answers HEAD requests for manifests with 405 Method Not
	// Allowed, once the fixtures are pushed.
	noHead bool
}

// testRegistry is an in-memory OCI registry (go-containerregistry's) behind
// httptest, wrapped in handlers that count requests, check basic auth, fail
// every request or serve other content than asked for.
type testRegistry struct {
	srv      *httptest.Server
	host     string
	opts     regOpts
	handler  http.Handler
	requests atomic.Int64
	status   atomic.Int32 // when non-zero, every request fails with it
	noHead   atomic.Bool

	mu      sync.Mutex
	rewrite map[string]string // digest asked for → digest served
}

func newRegistry(t *testing.T, opts regOpts) *testRegistry {
	t.Helper()
	r := &testRegistry{opts: opts, handler: registry.New(registry.Logger(log.New(io.Discard, "", 0)))}
	r.srv = httptest.NewUnstartedServer(r)
	r.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // TLS handshakes the tests make fail
	if opts.tls {
		r.srv.StartTLS()
	} else {
		r.srv.Start()
	}
	t.Cleanup(r.srv.Close)
	r.host = strings.TrimPrefix(strings.TrimPrefix(r.srv.URL, "https://"), "http://")
	return r
}

// ServeHTTP counts, checks and rewrites the request and passes it on to
// the registry.
func (r *testRegistry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.requests.Add(1)
	if code := int(r.status.Load()); code != 0 {
		http.Error(w, "registry is down", code)
		return
	}
	if r.opts.auth {
		if u, p, ok := req.BasicAuth(); !ok || u != testUser || p != testPassword {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
			return
		}
	}
	if r.noHead.Load() && req.Method == http.MethodHead && strings.Contains(req.URL.Path, "/manifests/") {
		http.Error(w, "", http.StatusMethodNotAllowed)
		return
	}
	r.mu.Lock()
	for from, to := range r.rewrite {
		req.URL.Path = strings.Replace(req.URL.Path, from, to, 1)
	}
	r.mu.Unlock()
	r.handler.ServeHTTP(w, req)
}

// serveInstead makes the registry serve the manifest or blob to when asked
// for from.
func (r *testRegistry) serveInstead(from, to string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rewrite == nil {
		r.rewrite = map[string]string{}
	}
	r.rewrite[from] = to
}

// remoteOptions are the options to push to the registry.
func (r *testRegistry) remoteOptions() []remote.Option {
	opts := []remote.Option{remote.WithTransport(r.srv.Client().Transport)}
	if r.opts.auth {
		opts = append(opts, remote.WithAuth(&authn.Basic{Username: testUser, Password: testPassword}))
	}
	return opts
}

// push writes img (a v1.Image or a v1.ImageIndex) as repo:tag and returns
// its digest.
func (r *testRegistry) push(t *testing.T, repoTag string, img any) string {
	t.Helper()
	ref, err := name.ParseReference(r.host + "/" + repoTag)
	if err != nil {
		t.Fatal(err)
	}
	var d v1.Hash
	switch x := img.(type) {
	case v1.Image:
		err = remote.Write(ref, x, r.remoteOptions()...)
		if err == nil {
			d, err = x.Digest()
		}
	case v1.ImageIndex:
		err = remote.WriteIndex(ref, x, r.remoteOptions()...)
		if err == nil {
			d, err = x.Digest()
		}
	}
	if err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	return d.String()
}

// entry is a tar entry; a name ending in "/" is a directory.
type entry struct{ name, body string }

func tarOf(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Typeflag: tar.TypeReg}
		if strings.HasSuffix(e.name, "/") {
			h = &tar.Header{Name: e.name, Mode: 0o755, Typeflag: tar.TypeDir}
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func gzipOf(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// layerOf returns a layer of an in-memory tar (tarball gzips it, media
// type Docker's gzip layer), or of the content as it is with mt.
func layerOf(t *testing.T, b []byte, opts ...tarball.LayerOption) v1.Layer {
	t.Helper()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func imageOf(t *testing.T, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// fixtures are the images every test registry holds, by repo:tag.
type fixtures struct {
	images  map[string]any    // v1.Image or v1.ImageIndex
	digests map[string]string // of the images, as pushed
	layers  map[string][]string
}

// Files of the fixtures once unpacked.
var (
	layeredFiles = map[string]string{"manifests/a.yaml": "kind: A", "manifests/c.yaml": "kind: C", "README": "two"}
	nextFiles    = map[string]string{"manifests/a.yaml": "kind: A2"}
)

func pushFixtures(t *testing.T, r *testRegistry) fixtures {
	t.Helper()
	// Two layers: the second deletes b.yaml with a whiteout, replaces
	// README and adds c.yaml.
	layered := imageOf(t,
		layerOf(t, tarOf(t, entry{"manifests/", ""}, entry{"manifests/a.yaml", "kind: A"}, entry{"manifests/b.yaml", "kind: B"}, entry{"README", "one"})),
		layerOf(t, tarOf(t, entry{"manifests/.wh.b.yaml", ""}, entry{"manifests/c.yaml", "kind: C"}, entry{"README", "two"})))
	next := imageOf(t, layerOf(t, tarOf(t, entry{"manifests/a.yaml", "kind: A2"}), tarball.WithMediaType(types.OCILayer)))
	amd64 := imageOf(t, layerOf(t, tarOf(t, entry{"arch.txt", "amd64"})))
	arm64 := imageOf(t, layerOf(t, tarOf(t, entry{"arch.txt", "arm64"})))
	multi := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: amd64, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: arm64, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}}})
	// A Helm chart as helm push makes it: a config of the chart's media
	// type and one layer holding the chart's .tgz.
	chartTgz := gzipOf(t, tarOf(t, entry{"mychart/Chart.yaml", "name: mychart"}, entry{"mychart/templates/cm.yaml", "kind: ConfigMap"}))
	chart := mutate.ConfigMediaType(mutate.MediaType(
		imageOf(t, layerOf(t, chartTgz, tarball.WithMediaType(helmChartMediaType))), types.OCIManifestSchema1), helmConfigMediaType)
	// An uncompressed OCI layer.
	plain := mutate.MediaType(imageOf(t, static.NewLayer(tarOf(t, entry{"plain.txt", "plain"}), types.OCIUncompressedLayer)), types.OCIManifestSchema1)

	f := fixtures{
		images:  map[string]any{"bundle:v1": layered, "bundle:v2": next, "multi:latest": multi, "chart:1.0.0": chart, "plain:v1": plain},
		digests: map[string]string{}, layers: map[string][]string{},
	}
	for tag, img := range f.images {
		f.digests[tag] = r.push(t, tag, img)
		if i, ok := img.(v1.Image); ok {
			ls, err := i.Layers()
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range ls {
				d, err := l.Digest()
				if err != nil {
					t.Fatal(err)
				}
				f.layers[tag] = append(f.layers[tag], d.String())
			}
		}
	}
	return f
}

// pin returns the digest of the fixture key, or key if it is a digest.
func (f fixtures) pin(key string) string {
	if strings.HasPrefix(key, "sha256:") {
		return key
	}
	return f.digests[key]
}
