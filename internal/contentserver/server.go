package contentserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/store"
	"github.com/rukpak/rukpak/internal/upload"
)

// PathPrefix is where Bundles are served: PathPrefix + NAME.
const PathPrefix = "/bundles/"

// Subresource is the RBAC subresource of bundles that grants reading
// content: `{apiGroups: [core.rukpak.io], resources: [bundles/content],
// verbs: [get]}`.
const Subresource = "content"

// Uploads stores uploaded archives; *upload.Store is one.
type Uploads interface {
	// Put stores the archive read from r, whose digest must be digest,
	// and records uploader as one of its uploaders. An uploader who stored
	// it already is not read again.
	Put(ctx context.Context, r io.Reader, digest, uploader string) error
	// Stat describes a stored upload.
	Stat(ctx context.Context, digest string) (upload.Info, error)
	// MaxSize is the largest archive Put accepts.
	MaxSize() int64
}

var _ Uploads = (*upload.Store)(nil)

// Server serves Bundle content and, with WithUploads, takes uploads.
type Server struct {
	store   *store.Store
	bundles client.Reader
	auth    *reviewer
	log     logr.Logger

	uploads       Uploads
	uploadSlots   chan struct{}
	uploadTimeout time.Duration

	// fill, when set, unpacks a Bundle this replica has not unpacked.
	fill Fill
}

// Fill unpacks Bundle b's content into the store (from its pinned
// sources, status.resolvedSources) and returns the digest of the tree.
type Fill func(ctx context.Context, b *v1alpha2.Bundle) (string, error)

// WithFill makes the server unpack, with fill, the content of a Bundle
// that this replica has not unpacked (another replica did), after the
// request is authorized; without it such a request gets 503.
func WithFill(fill Fill) Option { return func(s *Server) { s.fill = fill } }

// Option configures a Server.
type Option func(*Server)

// WithUploads makes the server take uploads at UploadPathPrefix into u, at
// most concurrent at once (DefaultMaxConcurrentUploads when 0), each within
// timeout (DefaultUploadTimeout when 0).
func WithUploads(u Uploads, concurrent int, timeout time.Duration) Option {
	return func(s *Server) {
		if concurrent <= 0 {
			concurrent = DefaultMaxConcurrentUploads
		}
		if timeout <= 0 {
			timeout = DefaultUploadTimeout
		}
		s.uploads, s.uploadSlots, s.uploadTimeout = u, make(chan struct{}, concurrent), timeout
	}
}

// WithAudience sets the audience tokens must be for (Audience by default).
func WithAudience(audience string) Option {
	return func(s *Server) { s.auth.audience = audience }
}

// WithLogger logs every upload (who stored which digest) and every refused
// one to log.
func WithLogger(log logr.Logger) Option { return func(s *Server) { s.log = log } }

// New returns a Server reading content from st, Bundles through bundles and
// reviewing tokens and access through kube.
func New(st *store.Store, bundles client.Reader, kube kubernetes.Interface, opts ...Option) *Server {
	s := &Server{store: st, bundles: bundles, auth: newReviewer(kube, Audience), log: logr.Discard()}
	for _, o := range opts {
		o(s)
	}
	return s
}

// URL returns where the content of Bundle name is served under base (the
// server's external URL, e.g. https://rukpak-content.rukpak-system.svc).
func URL(base, name string) string {
	return strings.TrimRight(base, "/") + PathPrefix + name
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if name, ok := strings.CutPrefix(r.URL.Path, PathPrefix); ok {
		s.serveBundle(w, r, name)
		return
	}
	if digest, ok := strings.CutPrefix(r.URL.Path, UploadPathPrefix); ok && s.uploads != nil {
		s.serveUpload(w, r, digest)
		return
	}
	http.NotFound(w, r)
}

// authenticate reads and reviews the request's bearer token. Without a
// valid one it answers 401 (or 500) and returns ok false.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (token string, user authenticationv1.UserInfo, ok bool) {
	token, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !found || token == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="rukpak"`)
		http.Error(w, fmt.Sprintf("a bearer token for audience %s is required", s.auth.audience), http.StatusUnauthorized)
		return "", user, false
	}
	user, err := s.auth.authenticate(r.Context(), token)
	var invalid *tokenError
	switch {
	case errors.As(err, &invalid):
		w.Header().Set("WWW-Authenticate", `Bearer realm="rukpak", error="invalid_token"`)
		http.Error(w, invalid.Error(), http.StatusUnauthorized)
		return "", user, false
	case err != nil:
		http.Error(w, "reviewing the token: "+err.Error(), http.StatusInternalServerError)
		return "", user, false
	}
	return token, user, true
}

// authorize asks whether user may do attrs; when not, it answers 403 with
// forbidden (or 500) and returns false.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, token string, user authenticationv1.UserInfo, attrs authorizationv1.ResourceAttributes, forbidden string) bool {
	allowed, err := s.auth.allowed(r.Context(), token, user, attrs)
	switch {
	case err != nil:
		http.Error(w, "reviewing access: "+err.Error(), http.StatusInternalServerError)
		return false
	case !allowed:
		http.Error(w, forbidden, http.StatusForbidden)
		return false
	}
	return true
}

// serveBundle streams the content of Bundle name as a gzipped tar.
func (s *Server) serveBundle(w http.ResponseWriter, r *http.Request, name string) {
	if name == "" || strings.Contains(name, "/") {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "only GET", http.StatusMethodNotAllowed)
		return
	}
	token, user, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	attrs := authorizationv1.ResourceAttributes{
		Group: v1alpha2.GroupVersion.Group, Resource: "bundles", Subresource: Subresource, Verb: "get", Name: name,
	}
	if !s.authorize(w, r, token, user, attrs, fmt.Sprintf("user %q may not get bundles/%s %q in API group %s",
		user.Username, Subresource, name, v1alpha2.GroupVersion.Group)) {
		return
	}
	b := &v1alpha2.Bundle{}
	if err := s.bundles.Get(r.Context(), client.ObjectKey{Name: name}, b); err != nil {
		if apierrors.IsNotFound(err) {
			http.Error(w, fmt.Sprintf("Bundle %s not found", name), http.StatusNotFound)
			return
		}
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	d := b.ContentDigest()
	if d != "" && !s.store.Has(d) && s.fill != nil && len(b.ResolvedSources()) > 0 {
		got, err := s.fill(r.Context(), b)
		switch {
		case err != nil:
			s.log.Info("unpacking a Bundle to serve it failed", "bundle", name, "error", err.Error())
			http.Error(w, fmt.Sprintf("Bundle %s: unpacking its content on this replica failed: %v", name, err), http.StatusServiceUnavailable)
			return
		case got != d:
			http.Error(w, fmt.Sprintf("Bundle %s: its sources unpack to %s on this replica, not %s", name, got, d), http.StatusBadGateway)
			return
		}
	}
	if d == "" || !s.store.Has(d) {
		http.Error(w, fmt.Sprintf("Bundle %s is not unpacked on this replica yet", name), http.StatusServiceUnavailable)
		return
	}
	fsys, err := s.store.FS(d)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/gzip")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", name+".tar.gz"))
	w.Header().Set("Docker-Content-Digest", d) // the tree digest, for reference
	if r.Method == http.MethodHead {
		return
	}
	if err := writeTarGz(w, fsys); err != nil {
		// Headers are sent; all that is left is to cut the stream short.
		panic(http.ErrAbortHandler)
	}
}
