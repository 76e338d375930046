package http

import (
	"io/fs"
	nethttp "net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func code(c int) func(*testing.T, []byte) nethttp.Handler {
	return func(*testing.T, []byte) nethttp.Handler { return status(c) }
}

func withBasic(user, password string) func(*testing.T, []byte) nethttp.Handler {
	return func(_ *testing.T, body []byte) nethttp.Handler { return basicAuth(user, password, serve(body)) }
}

func withBearer(token string) func(*testing.T, []byte) nethttp.Handler {
	return func(_ *testing.T, body []byte) nethttp.Handler { return bearer(token, serve(body)) }
}

// redirect redirects every path but to to it, where it serves the body.
func redirect(to string) func(*testing.T, []byte) nethttp.Handler {
	return func(_ *testing.T, body []byte) nethttp.Handler {
		return nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
			if r.URL.Path == to {
				_, _ = w.Write(body)
				return
			}
			nethttp.Redirect(w, r, to, nethttp.StatusFound)
		})
	}
}

// redirectToPlain redirects to a plain-HTTP server serving the body.
func redirectToPlain(t *testing.T, body []byte) nethttp.Handler {
	plain := newServer(t, false, serve(body))
	return nethttp.RedirectHandler(plain.URL+"/bundle.tar.gz", nethttp.StatusFound)
}

func withUserinfo(u, userinfo string) string {
	if userinfo == "" {
		return u
	}
	return strings.Replace(u, "://", "://"+userinfo+"@", 1)
}

func bytesMap(m map[string]string) map[string][]byte {
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		out[k] = []byte(v)
	}
	return out
}

func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// readFiles returns the regular files under dir: slash path → content.
func readFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
