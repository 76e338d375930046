package http

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"io"
	"log"
	nethttp "net/http"
	"net/http/httptest"
	"sort"
	"sync/atomic"
	"testing"
	"time"
)

// server is an HTTP(S) server on loopback that counts its requests.
type server struct {
	*httptest.Server
	requests atomic.Int32
}

// newServer starts a server with handler h, with TLS when tls is set.
func newServer(t *testing.T, tls bool, h nethttp.Handler) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewUnstartedServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		s.requests.Add(1)
		h.ServeHTTP(w, r)
	}))
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // refused TLS handshakes are expected
	if tls {
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

// caPEM returns the server's certificate, PEM-encoded.
func (s *server) caPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
}

// serve answers with body and its Content-Length.
func serve(body []byte) nethttp.HandlerFunc {
	return func(w nethttp.ResponseWriter, _ *nethttp.Request) { _, _ = w.Write(body) }
}

// chunked answers with body without a Content-Length.
func chunked(body []byte) nethttp.HandlerFunc {
	return func(w nethttp.ResponseWriter, _ *nethttp.Request) {
		for rest := body; len(rest) > 0; {
			n := min(len(rest), 64)
			_, _ = w.Write(rest[:n])
			w.(nethttp.Flusher).Flush()
			rest = rest[n:]
		}
	}
}

// status answers with code.
func status(code int) nethttp.HandlerFunc {
	return func(w nethttp.ResponseWriter, _ *nethttp.Request) { w.WriteHeader(code) }
}

// basicAuth passes requests with user and password on to next, else 401.
func basicAuth(user, password string, next nethttp.Handler) nethttp.HandlerFunc {
	return func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != password {
			w.WriteHeader(nethttp.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	}
}

// bearer passes requests with token on to next, else 401.
func bearer(token string, next nethttp.Handler) nethttp.HandlerFunc {
	return func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(nethttp.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	}
}

// hangUp closes the connection without answering.
func hangUp(w nethttp.ResponseWriter, _ *nethttp.Request) {
	conn, _, err := w.(nethttp.Hijacker).Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

// stall answers only after d, or when the client goes away.
func stall(d time.Duration) nethttp.HandlerFunc {
	return func(w nethttp.ResponseWriter, r *nethttp.Request) {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
		}
	}
}

// tarGz returns a .tar.gz archive of files (path → content).
func tarGz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		hdr := &tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(files[n])), ModTime: time.Unix(0, 0)}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, files[n]); err != nil {
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

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// zeroSHA is a sha256 that no archive of the tests has.
const zeroSHA = "0000000000000000000000000000000000000000000000000000000000000000"
