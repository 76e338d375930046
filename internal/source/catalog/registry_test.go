//go:build integration

package catalog

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// testRegistry is an in-memory OCI registry (go-containerregistry's)
// behind httptest on loopback, counting the blobs it serves.
type testRegistry struct {
	host    string
	handler http.Handler
	blobs   atomic.Int64
}

func newRegistry(t *testing.T) *testRegistry {
	t.Helper()
	r := &testRegistry{handler: registry.New(registry.Logger(log.New(io.Discard, "", 0)))}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	r.host = strings.TrimPrefix(srv.URL, "http://")
	return r
}

// ServeHTTP counts blob GETs and passes the request to the registry.
func (r *testRegistry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/") {
		r.blobs.Add(1)
	}
	r.handler.ServeHTTP(w, req)
}

// push pushes img as repoTag of r and returns its digest.
func (r *testRegistry) push(t *testing.T, repoTag string, img v1.Image) string {
	t.Helper()
	ref, err := name.ParseReference(r.host+"/"+repoTag, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatalf("pushing %s: %v", repoTag, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// imageOf is an image of one layer holding files (path → content), with
// labels on its config.
func imageOf(t *testing.T, files map[string]string, labels map[string]string) v1.Image {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for p, content := range files {
		if err := tw.WriteHeader(&tar.Header{Name: p, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.Config.Labels = labels
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// bundleFix is a bundle of the test catalog.
type bundleFix struct {
	pkg, version string
	requires     string // an olm.package.required package, if any
}

func (b bundleFix) name() string { return b.pkg + ".v" + b.version }

// bundleFiles are the files of b's registry+v1 bundle image.
func bundleFiles(b bundleFix) map[string]string {
	return map[string]string{
		"manifests/deploy.yaml":     "# " + b.name() + "\nkind: ConfigMap\n",
		"metadata/annotations.yaml": "annotations:\n  operators.operatorframework.io.bundle.package.v1: " + b.pkg + "\n",
	}
}

// fbc returns File-Based Catalog blobs as a JSON stream.
func fbc(t *testing.T, blobs ...any) string {
	t.Helper()
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	for _, b := range blobs {
		if err := enc.Encode(b); err != nil {
			t.Fatal(err)
		}
	}
	return sb.String()
}

type obj = map[string]any

func pkgBlob(name, def string) obj {
	return obj{"schema": "olm.package", "name": name, "defaultChannel": def}
}

func channelBlob(pkg, name string, entries ...obj) obj {
	return obj{"schema": "olm.channel", "package": pkg, "name": name, "entries": entries}
}

func bundleBlob(host string, b bundleFix) obj {
	props := []obj{{"type": "olm.package", "value": obj{"packageName": b.pkg, "version": b.version}}}
	if b.requires != "" {
		props = append(props, obj{"type": "olm.package.required", "value": obj{"packageName": b.requires, "versionRange": ">=1.0.0"}})
	}
	return obj{"schema": "olm.bundle", "package": b.pkg, "name": b.name(),
		"image": fmt.Sprintf("%s/bundles/%s:v%s", host, b.pkg, b.version), "properties": props}
}
