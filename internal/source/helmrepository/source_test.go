//go:build integration

package helmrepository

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	nethttp "net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/helmrepo"
	"github.com/rukpak/rukpak/internal/source"
	"github.com/rukpak/rukpak/internal/source/credentials"
	httpsource "github.com/rukpak/rukpak/internal/source/http"
	"github.com/rukpak/rukpak/internal/source/image"
	"github.com/rukpak/rukpak/pkg/envtest"
	"github.com/rukpak/rukpak/pkg/failure"
)

var env *envtest.Env

func TestMain(m *testing.M) { envtest.Run(m, &env) }

// repo is a Helm chart repository on loopback: an index of the charts
// published, the archives, and what it was asked.
type repo struct {
	t        *testing.T
	srv      *httptest.Server
	mu       sync.Mutex
	index    string
	etag     string
	archives map[string][]byte // path -> archive
	// user and password, when set, are required of every request.
	user, password string
	// requests counts requests by path; auth records the Authorization
	// header each path was last sent with.
	requests map[string]int
	auth     map[string]string
}

func newRepo(t *testing.T) *repo {
	r := &repo{t: t, archives: map[string][]byte{}, requests: map[string]int{}, auth: map[string]string{}}
	r.srv = httptest.NewServer(nethttp.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *repo) serve(w nethttp.ResponseWriter, req *nethttp.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests[req.URL.Path]++
	r.auth[req.URL.Path] = req.Header.Get("Authorization")
	if r.user != "" {
		if u, p, ok := req.BasicAuth(); !ok || u != r.user || p != r.password {
			nethttp.Error(w, "who are you", nethttp.StatusUnauthorized)
			return
		}
	}
	if req.URL.Path == "/charts/index.yaml" {
		if r.index == "" {
			nethttp.NotFound(w, req)
			return
		}
		w.Header().Set("ETag", r.etag)
		if req.Header.Get("If-None-Match") == r.etag {
			w.WriteHeader(nethttp.StatusNotModified)
			return
		}
		_, _ = w.Write([]byte(r.index))
		return
	}
	if a, ok := r.archives[req.URL.Path]; ok {
		_, _ = w.Write(a)
		return
	}
	nethttp.NotFound(w, req)
}

// publish puts the versions of chart greeter in the index, each archive
// at a relative URL unless at says otherwise, with its digest unless
// noDigest.
func (r *repo) publish(versions []string, at func(version string) (url string, srv *repo), noDigest bool) {
	r.t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: v1\nentries:\n  greeter:\n")
	for _, v := range versions {
		archive := chartArchive(r.t, v)
		url, host := "greeter-"+v+".tgz", r
		if at != nil {
			url, host = at(v)
		}
		host.mu.Lock()
		host.archives["/charts/greeter-"+v+".tgz"] = archive
		host.mu.Unlock()
		sum := sha256.Sum256(archive)
		fmt.Fprintf(&b, "  - apiVersion: v2\n    name: greeter\n    version: %s\n    urls:\n    - %s\n", v, url)
		if !noDigest {
			fmt.Fprintf(&b, "    digest: %s\n", hex.EncodeToString(sum[:]))
		}
	}
	b.WriteString("generated: \"2026-11-27T00:00:00Z\"\n")
	r.mu.Lock()
	r.index = b.String()
	r.etag = fmt.Sprintf(`"%x"`, sha256.Sum256([]byte(r.index)))
	r.mu.Unlock()
}

func (r *repo) count(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests[path]
}

// chartArchive is a chart archive as helm package makes one (the chart
// in a directory of its name), the same bytes for the same version.
func chartArchive(t *testing.T, version string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range []struct{ name, body string }{
		{"greeter/Chart.yaml", "apiVersion: v2\nname: greeter\nversion: " + version + "\n"},
		{"greeter/templates/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: greeter\n"},
	} {
		name, body := f.name, f.body
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func newSource(opts ...Option) *Source {
	creds := credentials.NewReader(env.Client, v1alpha2.SystemNamespace)
	return New(creds, httpsource.New(creds), image.New(creds), opts...)
}

func helmSource(url, version string) v1alpha2.BundleSource {
	return v1alpha2.BundleSource{Type: v1alpha2.SourceTypeHelmRepository,
		HelmRepository: &v1alpha2.HelmRepositorySource{URL: url, Chart: "greeter", Version: version}}
}

func secret(t *testing.T, data map[string]string) *v1alpha2.LocalObjectReference {
	t.Helper()
	return typedSecret(t, corev1.SecretTypeOpaque, data)
}

// typedSecret creates a Secret of type typ holding data in rukpak-system
// and waits until the credentials reader sees it.
func typedSecret(t *testing.T, typ corev1.SecretType, data map[string]string) *v1alpha2.LocalObjectReference {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("repo-auth"), Namespace: v1alpha2.SystemNamespace}, Type: typ, StringData: data}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), s) })
	// The reader reads through the client's cache: wait until it has it.
	envtest.Eventually(t, 10*time.Second, func() error {
		_, err := credentials.NewReader(env.Client, v1alpha2.SystemNamespace).Secret(context.Background(), &v1alpha2.LocalObjectReference{Name: s.Name})
		return err
	})
	return &v1alpha2.LocalObjectReference{Name: s.Name}
}

func TestResolveAndUnpackFollowARange(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	r.publish([]string{"1.0.0", "1.1.0", "2.0.0", "1.2.0-rc.1"}, nil, false)
	s := newSource(WithMaxAge(0), WithWorkDir(t.TempDir()))
	src := helmSource(r.srv.URL+"/charts", "1.x")
	if !s.Floating(src) {
		t.Fatal("a range is not floating")
	}
	pinned, err := s.Resolve(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	h := pinned.HelmRepository
	sum := sha256.Sum256(chartArchive(t, "1.1.0"))
	if h.ResolvedVersion != "1.1.0" || h.ResolvedURL != r.srv.URL+"/charts/greeter-1.1.0.tgz" || h.SHA256 != hex.EncodeToString(sum[:]) || h.Version != "1.x" {
		t.Fatalf("pinned = %+v", h)
	}
	if s.Floating(pinned) {
		t.Error("a pinned source is floating")
	}
	dir := t.TempDir()
	if err := s.Unpack(ctx, pinned, dir); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "greeter", "Chart.yaml")); err != nil || !strings.Contains(string(b), "version: 1.1.0") {
		t.Fatalf("unpacked Chart.yaml: %q, %v", b, err)
	}

	// A newer version in range is published: the next resolve takes it.
	r.publish([]string{"1.0.0", "1.1.0", "2.0.0", "1.3.0"}, nil, false)
	if again, err := s.Resolve(ctx, src); err != nil || again.HelmRepository.ResolvedVersion != "1.3.0" {
		t.Fatalf("after 1.3.0 was published: %+v, %v", again.HelmRepository, err)
	}
	// A pinned source makes no request.
	before := r.count("/charts/index.yaml")
	if _, err := s.Resolve(ctx, pinned); err != nil || r.count("/charts/index.yaml") != before {
		t.Fatalf("resolving a pinned source: %v, %d requests", err, r.count("/charts/index.yaml")-before)
	}
}

func TestNeverDowngradedByItself(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	r.publish([]string{"1.0.0", "1.1.0"}, nil, false)
	s := newSource(WithMaxAge(0), WithWorkDir(t.TempDir()))
	reg := source.Registry{v1alpha2.SourceTypeHelmRepository: s}
	spec := []v1alpha2.BundleSource{helmSource(r.srv.URL+"/charts", "1.x")}
	first, err := reg.Resolve(ctx, spec, nil, false)
	if err != nil || first[0].HelmRepository.ResolvedVersion != "1.1.0" {
		t.Fatalf("first resolve: %+v, %v", first, err)
	}
	// 1.1.0 is taken off the index: what was selected stays selected.
	r.publish([]string{"1.0.0"}, nil, false)
	again, err := reg.Resolve(ctx, spec, first, false)
	if err != nil || !reflect.DeepEqual(again, first) {
		t.Fatalf("after 1.1.0 was removed: %+v, %v; want %+v", again[0].HelmRepository, err, first[0].HelmRepository)
	}
	// A newer version is still taken.
	r.publish([]string{"1.0.0", "1.2.0"}, nil, false)
	if newer, err := reg.Resolve(ctx, spec, first, false); err != nil || newer[0].HelmRepository.ResolvedVersion != "1.2.0" {
		t.Fatalf("after 1.2.0 was published: %+v, %v", newer, err)
	}
	// Another range is another spec: its newest version, older or not.
	other := []v1alpha2.BundleSource{helmSource(r.srv.URL+"/charts", "~1.0.0")}
	if down, err := reg.Resolve(ctx, other, first, false); err != nil || down[0].HelmRepository.ResolvedVersion != "1.0.0" {
		t.Fatalf("a range changed by the user: %+v, %v", down, err)
	}
}

func TestIndexFetchedOncePerMaxAge(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	r.publish([]string{"1.0.0"}, nil, false)
	s := newSource(WithMaxAge(time.Hour), WithWorkDir(t.TempDir()))
	src := helmSource(r.srv.URL+"/charts", "*")
	var wg sync.WaitGroup
	var failed atomic.Int32
	for range 200 {
		wg.Go(func() {
			if _, err := s.Resolve(ctx, src); err != nil {
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	if failed.Load() > 0 || r.count("/charts/index.yaml") != 1 {
		t.Fatalf("200 resolves: %d failed, %d fetches of the index, want 1", failed.Load(), r.count("/charts/index.yaml"))
	}

	// Once it is older than maxAge, it is asked for again, conditionally:
	// unchanged, it is not sent again.
	now := time.Now()
	s.cache.now = func() time.Time { return now.Add(2 * time.Hour) }
	if _, err := s.Resolve(ctx, src); err != nil {
		t.Fatal(err)
	}
	if n := r.count("/charts/index.yaml"); n != 2 {
		t.Fatalf("%d fetches after maxAge, want 2", n)
	}
}

func TestCredentials(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	elsewhere := newRepo(t)
	r.user, r.password = "alice", "s3cret-pw"
	// 1.0.0 is on the repository's host, 2.0.0 on another.
	r.publish([]string{"1.0.0", "2.0.0"}, func(v string) (string, *repo) {
		if v == "2.0.0" {
			return elsewhere.srv.URL + "/charts/greeter-2.0.0.tgz", elsewhere
		}
		return "greeter-1.0.0.tgz", r
	}, false)
	s := newSource(WithMaxAge(time.Hour), WithWorkDir(t.TempDir()))
	withAuth := func(version string, ref *v1alpha2.LocalObjectReference) v1alpha2.BundleSource {
		src := helmSource(r.srv.URL+"/charts", version)
		src.HelmRepository.Auth = &v1alpha2.HTTPAuth{Secret: *ref}
		return src
	}
	good := secret(t, map[string]string{"username": "alice", "password": "s3cret-pw"})
	for _, v := range []string{"1.0.0", "2.0.0"} {
		pinned, err := s.Resolve(ctx, withAuth(v, good))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Unpack(ctx, pinned, t.TempDir()); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
	}
	if r.auth["/charts/greeter-1.0.0.tgz"] == "" {
		t.Error("the archive on the repository's host was downloaded without the credentials")
	}
	if a := elsewhere.auth["/charts/greeter-2.0.0.tgz"]; a != "" {
		t.Errorf("the archive on another host was sent the repository's credentials: %q", a)
	}

	// What alice's credentials fetched answers no one else: without
	// credentials, or with others, the index is asked for again.
	fetches := r.count("/charts/index.yaml")
	_, err := s.Resolve(ctx, helmSource(r.srv.URL+"/charts", "1.0.0"))
	if f := failure.As(err); f == nil || f.Reason != v1alpha2.ReasonUnpackFailed || !strings.Contains(f.Message, "authentication failed (401 Unauthorized)") {
		t.Errorf("without credentials: %v", err)
	}
	wrong := secret(t, map[string]string{"username": "alice", "password": "guess"})
	if _, err := s.Resolve(ctx, withAuth("1.0.0", wrong)); err == nil || strings.Contains(err.Error(), "guess") {
		t.Errorf("with wrong credentials: %v", err)
	}
	if n := r.count("/charts/index.yaml") - fetches; n != 2 {
		t.Errorf("%d fetches of the index for two other sets of credentials, want 2", n)
	}
}

func TestRefusals(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		setup   func(r *repo)
		version string
		lim     *helmrepo.Limits
		reason  string
		msg     string
		unpack  bool // the failure is Unpack's
	}{
		{name: "no index", setup: func(*repo) {}, reason: v1alpha2.ReasonSourceNotFound, msg: "fetching its index: http source {url}/charts/index.yaml: not found (404 Not Found)"},
		{name: "no such chart", setup: func(r *repo) { r.index = "apiVersion: v1\nentries:\n  other: []\n"; r.etag = `"x"` },
			reason: v1alpha2.ReasonSourceNotFound, msg: `its index has no chart "greeter"`},
		{name: "nothing in range", setup: func(r *repo) { r.publish([]string{"1.0.0"}, nil, false) }, version: "2.x",
			reason: v1alpha2.ReasonSourceNotFound, msg: `chart "greeter" has no version in "2.x" (1 versions published)`},
		{name: "an index over the limit", setup: func(r *repo) { r.publish([]string{"1.0.0", "1.0.1"}, nil, false) },
			lim: &helmrepo.Limits{MaxBytes: 100}, reason: v1alpha2.ReasonResourceLimit, msg: "its index is larger than the limit of 100 bytes"},
		{name: "an index that does not parse", setup: func(r *repo) { r.index = "apiVersion: v1\nentries: {greeter: []}\n"; r.etag = `"y"` },
			reason: v1alpha2.ReasonUnpackFailed, msg: "flow style"},
		{name: "an archive that is not the one indexed", setup: func(r *repo) {
			r.publish([]string{"1.0.0"}, nil, false)
			r.archives["/charts/greeter-1.0.0.tgz"] = chartArchive(r.t, "6.6.6")
		}, reason: v1alpha2.ReasonDigestMismatch, msg: "sha256 is", unpack: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRepo(t)
			tt.setup(r)
			var opts []Option
			if tt.lim != nil {
				opts = append(opts, WithIndexLimits(*tt.lim))
			}
			s := newSource(append(opts, WithWorkDir(t.TempDir()))...)
			pinned, err := s.Resolve(ctx, helmSource(r.srv.URL+"/charts", tt.version))
			if tt.unpack {
				if err != nil {
					t.Fatal(err)
				}
				err = s.Unpack(ctx, pinned, t.TempDir())
			}
			f := failure.As(err)
			msg := strings.ReplaceAll(tt.msg, "{url}", r.srv.URL)
			if f == nil || f.Reason != tt.reason || !strings.Contains(f.Message, msg) {
				t.Fatalf("error = %v, want %s holding %q", err, tt.reason, msg)
			}
		})
	}
}

func TestAnIndexWithoutDigestsIsHashed(t *testing.T) {
	r := newRepo(t)
	r.publish([]string{"1.0.0"}, nil, true)
	s := newSource(WithWorkDir(t.TempDir()))
	pinned, err := s.Resolve(context.Background(), helmSource(r.srv.URL+"/charts/", "1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(chartArchive(t, "1.0.0"))
	if pinned.HelmRepository.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("sha256 %q, want the archive's", pinned.HelmRepository.SHA256)
	}
}
