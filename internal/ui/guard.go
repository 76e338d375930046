package ui

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// csrfField is the form field of a POST's CSRF token.
const csrfField = "csrf"

// contentSecurityPolicy allows only this server's script and style: a
// value that escaped escaping still could not run.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// NewToken returns a random token of 256 bits, URL-safe.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("reading random bytes: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// LoopbackHosts are the Host headers a browser sends to a server
// listening on addr (a host:port): the address itself and, for a loopback
// address, localhost, 127.0.0.1 and [::1] with its port.
func LoopbackHosts(addr string) []string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return []string{addr}
	}
	hosts := []string{net.JoinHostPort(host, port)}
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
		for _, h := range []string{"localhost", "127.0.0.1", "::1"} {
			if hp := net.JoinHostPort(h, port); !slices.Contains(hosts, hp) {
				hosts = append(hosts, hp)
			}
		}
	}
	return hosts
}

// ServeHTTP guards every request (package doc, step 1) and hands it, its
// path without the token prefix, to the pages.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	// same-origin, not no-referrer: under no-referrer a browser sends
	// "Origin: null" with a form's POST, which refusePost must refuse.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	if !s.hostAllowed(r.Host) {
		http.Error(w, "refused: Host "+strconv.Quote(r.Host)+" is not this server's", http.StatusForbidden)
		return
	}
	rest, ok := s.stripToken(r.URL.Path)
	if !ok {
		http.Error(w, "refused: open the URL rukpakctl ui printed; it holds this run's token", http.StatusForbidden)
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodPost:
		if why := s.refusePost(r); why != "" {
			http.Error(w, "refused: "+why, http.StatusForbidden)
			return
		}
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path, r2.URL.RawPath = rest, ""
	s.mux.ServeHTTP(w, r2)
}

// hostAllowed reports whether host (a Host header) names this server.
func (s *Server) hostAllowed(host string) bool {
	for _, h := range s.hosts {
		if strings.EqualFold(h, host) {
			return true
		}
	}
	return false
}

// stripToken returns path without its /t/TOKEN prefix, and whether it had
// this run's token; the token is compared in constant time.
func (s *Server) stripToken(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, "/t/")
	if !ok {
		return "", false
	}
	tok, rest, _ := strings.Cut(rest, "/")
	if subtle.ConstantTimeCompare([]byte(tok), []byte(s.token)) != 1 {
		return "", false
	}
	return "/" + rest, true
}

// refusePost says why POST r is refused, or "" when it may proceed: it
// must come from this origin (Origin, Sec-Fetch-Site when the browser
// sends them) and carry the CSRF token of the pages.
func (s *Server) refusePost(r *http.Request) string {
	if o := r.Header.Get("Origin"); o != "" && !strings.EqualFold(o, "http://"+r.Host) {
		return "the request comes from another origin (" + strconv.Quote(o) + ")"
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return "the request comes from another site (Sec-Fetch-Site " + strconv.Quote(site) + ")"
	}
	r.Body = http.MaxBytesReader(nil, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		return "unreadable form: " + err.Error()
	}
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get(csrfField)), []byte(s.csrf)) != 1 {
		return "missing or wrong CSRF token; reload the page"
	}
	return ""
}
