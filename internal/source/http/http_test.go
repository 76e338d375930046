//go:build integration

package http

import (
	"context"
	"maps"
	nethttp "net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/archive"
	"github.com/rukpak/rukpak/internal/source/credentials"
	"github.com/rukpak/rukpak/pkg/envtest"
	"github.com/rukpak/rukpak/pkg/failure"
)

var env *envtest.Env

func TestMain(m *testing.M) { envtest.Run(m, &env) }

// transient marks an expected error that is not a terminal failure.
const transient = "transient"

// want is the outcome of Resolve or Unpack: reason is "" for success, a
// failure reason, or transient; msg is part of the error message, with
// {url} standing for the archive's URL and {sha} for its sha256.
type want struct{ reason, msg string }

func TestSource(t *testing.T) {
	files := map[string]string{"manifests/a.yaml": "kind: A", "README": "hi"}
	good := tarGz(t, files)
	hostile := tarGz(t, map[string]string{"../sibling/pwned": "x"})
	tests := []struct {
		name     string
		tls      bool
		handler  func(t *testing.T, body []byte) nethttp.Handler
		body     []byte            // served by serve; good if nil
		secret   map[string]string // data of the auth Secret; none if nil
		noSecret bool              // name an auth Secret that does not exist
		ca       bool              // put the server's certificate in a CA Secret
		insecure bool
		userinfo string // put in the URL
		pin      string // sha256: "" (floating), "match" or a literal
		opts     []Option
		resolve  want // checked for floating sources
		unpack   want
		secrets  []string // must not appear in any message
	}{
		{name: "pinned: Resolve makes no request", pin: "match"},
		{name: "floating: Resolve downloads and pins"},
		{name: "sha256 mismatch", pin: zeroSHA,
			unpack: want{v1alpha2.ReasonDigestMismatch, "http source {url}: sha256 is {sha}, want " + zeroSHA}},
		{name: "not found", handler: code(nethttp.StatusNotFound),
			resolve: want{v1alpha2.ReasonSourceNotFound, "http source {url}: not found (404 Not Found)"}},
		{name: "gone while pinned", pin: "match", handler: code(nethttp.StatusGone),
			unpack: want{v1alpha2.ReasonSourceNotFound, "http source {url}: not found (410 Gone)"}},
		{name: "basic auth", handler: withBasic("alice", "s3cret-pw"),
			secret: map[string]string{"username": "alice", "password": "s3cret-pw"}},
		{name: "basic auth with a wrong password", handler: withBasic("alice", "s3cret-pw"),
			secret:  map[string]string{"username": "alice", "password": "wrong-pw"},
			resolve: want{v1alpha2.ReasonUnpackFailed, "http source {url}: authentication failed (401 Unauthorized)"},
			secrets: []string{"wrong-pw", "s3cret-pw"}},
		{name: "no credentials", pin: "match", handler: withBasic("alice", "s3cret-pw"),
			unpack: want{v1alpha2.ReasonUnpackFailed, "authentication failed (401 Unauthorized)"}},
		{name: "forbidden", handler: code(nethttp.StatusForbidden),
			resolve: want{v1alpha2.ReasonUnpackFailed, "authentication failed (403 Forbidden)"}},
		{name: "bearer token", pin: "match", handler: withBearer("t0ken-value"),
			secret: map[string]string{"token": "t0ken-value\n"}},
		{name: "bearer token wrong", handler: withBearer("t0ken-value"),
			secret:  map[string]string{"token": "other-t0ken"},
			resolve: want{v1alpha2.ReasonUnpackFailed, "authentication failed (401 Unauthorized)"},
			secrets: []string{"other-t0ken", "t0ken-value"}},
		{name: "Secret without credentials", secret: map[string]string{"user": "alice"},
			resolve: want{v1alpha2.ReasonUnpackFailed, "has neither a token key nor a username key"}},
		{name: "missing Secret", noSecret: true,
			resolve: want{v1alpha2.ReasonSourceNotFound, "http source {url}: Secret rukpak-system/"}},
		{name: "password in the URL is redacted", userinfo: "alice:hunter2-pw", handler: code(nethttp.StatusNotFound),
			resolve: want{v1alpha2.ReasonSourceNotFound, "alice:xxxxx@"},
			secrets: []string{"hunter2-pw"}},
		{name: "TLS with a CA Secret", tls: true, ca: true},
		{name: "TLS with a CA Secret and basic auth", tls: true, ca: true, pin: "match", handler: withBasic("alice", "s3cret-pw"),
			secret: map[string]string{"username": "alice", "password": "s3cret-pw"}},
		{name: "TLS without the CA", tls: true,
			resolve: want{transient, "certificate"}},
		{name: "TLS without the CA, pinned", tls: true, pin: "match",
			unpack: want{transient, "certificate"}},
		{name: "TLS with insecureSkipTLSVerify", tls: true, insecure: true},
		{name: "over the size limit", opts: []Option{WithMaxSize(100)},
			resolve: want{v1alpha2.ReasonUnpackFailed, "http source {url}: the archive is larger than the limit of 100 bytes"}},
		{name: "over the size limit without Content-Length", pin: "match", opts: []Option{WithMaxSize(100)},
			handler: func(_ *testing.T, body []byte) nethttp.Handler { return chunked(body) },
			unpack:  want{v1alpha2.ReasonUnpackFailed, "the archive is larger than the limit of 100 bytes"}},
		{name: "within the size limit without Content-Length", opts: []Option{WithMaxSize(int64(len(good)))},
			handler: func(_ *testing.T, body []byte) nethttp.Handler { return chunked(body) }},
		{name: "hostile archive", body: hostile,
			unpack: want{v1alpha2.ReasonUnpackFailed, `http source {url}: archive entry "../sibling/pwned": path escapes the destination`}},
		{name: "not an archive", body: []byte("<html>hello</html>"),
			unpack: want{v1alpha2.ReasonUnpackFailed, "archive: reading the gzip header: the archive is corrupt"}},
		{name: "archive limits", opts: []Option{WithArchiveLimits(archive.Limits{MaxFileBytes: 1})},
			unpack: want{v1alpha2.ReasonUnpackFailed, `archive entry "README": file of 2 bytes is larger than the limit of 1 bytes per file`}},
		{name: "server hangs up", handler: func(*testing.T, []byte) nethttp.Handler { return nethttp.HandlerFunc(hangUp) },
			resolve: want{transient, "http source {url}: "}},
		{name: "server error", pin: "match", handler: code(nethttp.StatusInternalServerError),
			unpack: want{transient, "http source {url}: server responded 500 Internal Server Error"}},
		{name: "too many requests", handler: code(nethttp.StatusTooManyRequests),
			resolve: want{transient, "server responded 429 Too Many Requests"}},
		{name: "bad request", handler: code(nethttp.StatusBadRequest),
			resolve: want{v1alpha2.ReasonUnpackFailed, "unexpected response 400 Bad Request"}},
		{name: "timeout", opts: []Option{WithTimeout(300 * time.Millisecond)},
			handler: func(*testing.T, []byte) nethttp.Handler { return stall(10 * time.Second) },
			resolve: want{v1alpha2.ReasonResourceLimit, "http source {url}: the download took longer than the limit of 300ms"}},
		{name: "redirect", handler: redirect("/elsewhere")},
		{name: "redirect from https to http", tls: true, insecure: true, handler: redirectToPlain,
			resolve: want{v1alpha2.ReasonUnpackFailed, "redirected from https to http://127.0.0.1:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			body := tt.body
			if body == nil {
				body = good
			}
			h := tt.handler
			if h == nil {
				h = func(*testing.T, []byte) nethttp.Handler { return serve(body) }
			}
			srv := newServer(t, tt.tls, h(t, body))
			src := v1alpha2.BundleSource{Type: v1alpha2.SourceTypeHTTP, HTTP: &v1alpha2.HTTPSource{
				URL: withUserinfo(srv.URL, tt.userinfo) + "/bundle.tar.gz", InsecureSkipTLSVerify: tt.insecure,
			}}
			if tt.pin == "match" {
				src.HTTP.SHA256 = sum(body)
			} else {
				src.HTTP.SHA256 = tt.pin
			}
			if tt.secret != nil || tt.noSecret {
				name := envtest.UniqueName("missing")
				if !tt.noSecret {
					name = createSecret(t, bytesMap(tt.secret))
				}
				src.HTTP.Auth = &v1alpha2.HTTPAuth{Secret: v1alpha2.LocalObjectReference{Name: name}}
			}
			if tt.ca {
				name := createSecret(t, map[string][]byte{credentials.CAKey: srv.caPEM()})
				src.HTTP.CASecret = &v1alpha2.LocalObjectReference{Name: name}
			}
			expand := strings.NewReplacer("{url}", srv.URL+"/bundle.tar.gz", "{sha}", sum(body)).Replace
			s := New(credentials.NewReader(env.Client, v1alpha2.SystemNamespace), tt.opts...)
			before := src.DeepCopy()

			pinned, err := s.Resolve(ctx, src)
			if tt.pin != "" {
				if err != nil || !equality.Semantic.DeepEqual(pinned, src) || srv.requests.Load() != 0 {
					t.Fatalf("Resolve of a pinned source = %v, %v after %d requests; want it unchanged without requests", pinned.HTTP, err, srv.requests.Load())
				}
			} else {
				if !check(t, "Resolve", err, tt.resolve, expand, tt.secrets) {
					return
				}
				if got := pinned.HTTP.SHA256; got != sum(body) {
					t.Fatalf("Resolve pinned sha256 %q, want %q", got, sum(body))
				}
				if !equality.Semantic.DeepEqual(before, &src) {
					t.Fatal("Resolve modified its argument")
				}
			}

			parent := t.TempDir()
			dir, sibling := filepath.Join(parent, "dest"), filepath.Join(parent, "sibling")
			mkdirs(t, dir, sibling)
			err = s.Unpack(ctx, pinned, dir)
			if entries, _ := os.ReadDir(parent); len(entries) != 2 {
				t.Fatalf("%s holds %v, want only dest and sibling (the temporary directory removed)", parent, entries)
			}
			if entries, _ := os.ReadDir(sibling); len(entries) != 0 {
				t.Fatalf("sibling holds %v", entries)
			}
			if !check(t, "Unpack", err, tt.unpack, expand, tt.secrets) {
				if entries, _ := os.ReadDir(dir); len(entries) != 0 {
					t.Fatalf("dest holds %v after a failure", entries)
				}
				return
			}
			if got := readFiles(t, dir); !maps.Equal(got, files) {
				t.Fatalf("unpacked %v, want %v", got, files)
			}
		})
	}
}

// check checks the outcome of op; it reports whether op succeeded.
func check(t *testing.T, op string, err error, w want, expand func(string) string, secrets []string) bool {
	t.Helper()
	if err != nil {
		for _, s := range secrets {
			if strings.Contains(err.Error(), s) {
				t.Fatalf("%s error %q holds a credential", op, err)
			}
		}
	}
	f := failure.As(err)
	switch {
	case w.reason == "" && err != nil:
		t.Fatalf("%s: %v", op, err)
	case w.reason == "":
		return true
	case err == nil:
		t.Fatalf("%s succeeded, want %s %q", op, w.reason, expand(w.msg))
	case w.reason == transient && f != nil:
		t.Fatalf("%s error = terminal %s %q, want a transient error", op, f.Reason, f.Message)
	case w.reason != transient && (f == nil || f.Reason != w.reason):
		t.Fatalf("%s error = %v (terminal: %v), want a %s failure", op, err, f != nil, w.reason)
	}
	if !strings.Contains(err.Error(), expand(w.msg)) {
		t.Fatalf("%s error = %q, want it to contain %q", op, err, expand(w.msg))
	}
	return false
}

// createSecret creates a Secret with data in rukpak-system and returns its
// name.
func createSecret(t *testing.T, data map[string][]byte) string {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("http"), Namespace: v1alpha2.SystemNamespace},
		Data:       data,
	}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatalf("creating Secret: %v", err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), s) })
	return s.Name
}
