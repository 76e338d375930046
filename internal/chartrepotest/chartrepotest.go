// Package chartrepotest serves a Helm chart repository over HTTP for
// tests: the chart greeter, whose ConfigMap greeting holds the chart's
// version, at the versions a test publishes, from a repository the test
// can take down.
package chartrepotest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Chart is the name of the chart the repository serves.
const Chart = "greeter"

// Repo is a chart repository on loopback.
type Repo struct {
	// URL is the repository's URL (its index is URL/index.yaml).
	URL string

	mu       sync.Mutex
	index    string
	archives map[string][]byte
	down     bool
}

// New starts a repository publishing versions of greeter; it stops when
// the test ends.
func New(t *testing.T, versions ...string) *Repo {
	t.Helper()
	r := &Repo{archives: map[string][]byte{}}
	r.Publish(t, versions...)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// ServeHTTP serves the index and the archives, or 503 while down.
func (r *Repo) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.down:
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	case req.URL.Path == "/index.yaml":
		_, _ = w.Write([]byte(r.index))
	case r.archives[req.URL.Path] != nil:
		_, _ = w.Write(r.archives[req.URL.Path])
	default:
		http.NotFound(w, req)
	}
}

// Publish makes versions the published versions of greeter (an archive
// once made stays the same, as a repository's would).
func (r *Repo) Publish(t *testing.T, versions ...string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: v1\nentries:\n  " + Chart + ":\n")
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range versions {
		path := "/" + Chart + "-" + v + ".tgz"
		if r.archives[path] == nil {
			r.archives[path] = TarGz(t, map[string]string{
				Chart + "/Chart.yaml":        "apiVersion: v2\nname: " + Chart + "\nversion: " + v + "\n",
				Chart + "/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: greeting\ndata:\n  value: {{ .Chart.Version | quote }}\n",
			})
		}
		sum := sha256.Sum256(r.archives[path])
		fmt.Fprintf(&b, "  - apiVersion: v2\n    name: %s\n    version: %s\n    digest: %s\n    urls:\n    - %s\n", Chart, v, hex.EncodeToString(sum[:]), path[1:])
	}
	r.index = b.String()
}

// SetDown takes the repository down (every request answered 503) or
// brings it back.
func (r *Repo) SetDown(down bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down = down
}

// TarGz is a gzipped tar archive of files (path → content), with fixed
// times, so that the same files make the same bytes.
func TarGz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg, ModTime: time.Unix(1700000000, 0)}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
