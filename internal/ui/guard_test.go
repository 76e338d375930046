package ui

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

const testHost = "127.0.0.1:4242"

// newTestServer is a Server without a cluster: the guard answers before
// any page reads one, and the static files need none.
func newTestServer(t *testing.T, readOnly bool) *Server {
	t.Helper()
	token, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Token: token, Hosts: LoopbackHosts(testHost), ReadOnly: readOnly})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func do(s *Server, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w
}

func TestNewTokenIsRandomAndLong(t *testing.T) {
	a, _ := NewToken()
	b, _ := NewToken()
	if a == b || len(a) < 43 {
		t.Errorf("tokens %q and %q: want two different tokens of 256 bits", a, b)
	}
}

func TestTokenRequired(t *testing.T) {
	s := newTestServer(t, false)
	for _, path := range []string{"/", "/static/ui.js", "/t/", "/t/wrong/static/ui.js", "/t/" + s.token[:10] + "/static/ui.js",
		"/t/" + s.token + "x/static/ui.js", "/bd/x", "/events", "/t//static/ui.js"} {
		w := do(s, httptest.NewRequest(http.MethodGet, "http://"+testHost+path, nil))
		if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "token") {
			t.Errorf("GET %s: %d %q, want 403 naming the token", path, w.Code, w.Body.String())
		}
	}
	w := do(s, httptest.NewRequest(http.MethodGet, "http://"+testHost+s.Path()+"static/ui.js", nil))
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "EventSource") {
		t.Errorf("GET with the token: %d, want the script", w.Code)
	}
}

func TestHostChecked(t *testing.T) {
	s := newTestServer(t, false)
	for _, host := range []string{"localhost:4242", "127.0.0.1:4242", "[::1]:4242", "LOCALHOST:4242"} {
		r := httptest.NewRequest(http.MethodGet, "http://"+host+s.Path()+"static/ui.css", nil)
		if w := do(s, r); w.Code != http.StatusOK {
			t.Errorf("Host %s: %d, want 200", host, w.Code)
		}
	}
	// A DNS-rebinding page reaches the server under its own name; another
	// port is another server.
	for _, host := range []string{"evil.example:4242", "evil.example", "127.0.0.1:4243", "127.0.0.1", "localhost.evil.example:4242", ""} {
		r := httptest.NewRequest(http.MethodGet, "http://"+testHost+s.Path()+"static/ui.css", nil)
		r.Host = host
		w := do(s, r)
		if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "Host") {
			t.Errorf("Host %q: %d %q, want 403 naming the Host", host, w.Code, w.Body.String())
		}
	}
}

func TestLoopbackHosts(t *testing.T) {
	got := strings.Join(LoopbackHosts("127.0.0.1:80"), " ")
	if got != "127.0.0.1:80 localhost:80 [::1]:80" {
		t.Errorf("LoopbackHosts = %s", got)
	}
	if got := strings.Join(LoopbackHosts("10.1.2.3:80"), " "); got != "10.1.2.3:80" {
		t.Errorf("LoopbackHosts of a non-loopback address = %s, want only itself", got)
	}
}

// post is a POST of form to path of s, as a browser on the page sends it.
func post(s *Server, path string, form url.Values, header http.Header) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "http://"+testHost+s.Path()+path, strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		r.Header[k] = v
	}
	return do(s, r)
}

func TestPostNeedsCSRFTokenAndOrigin(t *testing.T) {
	s := newTestServer(t, false)
	same := http.Header{"Origin": {"http://" + testHost}, "Sec-Fetch-Site": {"same-origin"}}
	for _, tc := range []struct {
		name   string
		form   url.Values
		header http.Header
		want   string
	}{
		{"no CSRF token", url.Values{"revision": {"r"}}, same, "CSRF"},
		{"wrong CSRF token", url.Values{"csrf": {otherFirst(s.csrf)}}, same, "CSRF"},
		{"the URL token as CSRF token", url.Values{"csrf": {s.token}}, same, "CSRF"},
		{"another origin", url.Values{"csrf": {s.csrf}}, http.Header{"Origin": {"http://evil.example"}}, "origin"},
		{"another site", url.Values{"csrf": {s.csrf}}, http.Header{"Sec-Fetch-Site": {"cross-site"}}, "site"},
		{"an opaque origin (a sandboxed frame)", url.Values{"csrf": {s.csrf}}, http.Header{"Origin": {"null"}}, "origin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := post(s, "bd/x/approve", tc.form, tc.header)
			if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), tc.want) {
				t.Errorf("%d %q, want 403 naming %s", w.Code, w.Body.String(), tc.want)
			}
		})
	}
}

// otherFirst returns tok with its first character changed: a token that
// differs from tok whatever tok is (a fixed first character would equal
// one random token in 64).
func otherFirst(tok string) string {
	if tok[0] == 'x' {
		return "y" + tok[1:]
	}
	return "x" + tok[1:]
}

func TestReadOnlyRefusesApproval(t *testing.T) {
	s := newTestServer(t, true)
	w := post(s, "bd/x/approve", url.Values{"csrf": {s.csrf}}, http.Header{"Origin": {"http://" + testHost}})
	if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "read-only") {
		t.Errorf("%d %q, want 403 read-only", w.Code, w.Body.String())
	}
}

func TestMethodsAndHeaders(t *testing.T) {
	s := newTestServer(t, false)
	r := httptest.NewRequest(http.MethodDelete, "http://"+testHost+s.Path(), nil)
	if w := do(s, r); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("DELETE: %d, want 405", w.Code)
	}
	w := do(s, httptest.NewRequest(http.MethodGet, "http://evil.example/", nil))
	h := w.Header()
	if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	for k, v := range map[string]string{"Referrer-Policy": "same-origin", "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff"} {
		if h.Get(k) != v {
			t.Errorf("%s = %q, want %q even on a refusal", k, h.Get(k), v)
		}
	}
}
