package contentserver

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/store"
)

// PathPrefix is where Bundles are served: PathPrefix + NAME.
const PathPrefix = "/bundles/"

// Subresource is the RBAC subresource of bundles that grants reading
// content: `{apiGroups: [core.rukpak.io], resources: [bundles/content],
// verbs: [get]}`.
const Subresource = "content"

// reviewTTL is how long a token's review result is reused.
const reviewTTL = 10 * time.Second

// Server serves Bundle content.
type Server struct {
	store   *store.Store
	bundles client.Reader
	kube    kubernetes.Interface

	mu      sync.Mutex
	reviews map[[32]byte]review
}

type review struct {
	user    authenticationv1.UserInfo
	ok      bool
	allowed map[string]bool // bundle name → SubjectAccessReview result
	expires time.Time
}

// New returns a Server reading content from st, Bundles through bundles and
// reviewing tokens and access through kube.
func New(st *store.Store, bundles client.Reader, kube kubernetes.Interface) *Server {
	return &Server{store: st, bundles: bundles, kube: kube, reviews: map[[32]byte]review{}}
}

// URL returns where the content of Bundle name is served under base (the
// server's external URL, e.g. https://rukpak-content.rukpak-system.svc).
func URL(base, name string) string {
	return strings.TrimRight(base, "/") + PathPrefix + name
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutPrefix(r.URL.Path, PathPrefix)
	if !ok || name == "" || strings.Contains(name, "/") {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "only GET", http.StatusMethodNotAllowed)
		return
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="rukpak"`)
		http.Error(w, "a bearer token is required", http.StatusUnauthorized)
		return
	}
	user, allowed, err := s.authorize(r.Context(), token, name)
	switch {
	case err != nil:
		http.Error(w, "reviewing the token: "+err.Error(), http.StatusInternalServerError)
		return
	case user == nil:
		http.Error(w, "the token is not valid", http.StatusUnauthorized)
		return
	case !allowed:
		http.Error(w, fmt.Sprintf("user %q may not get bundles/%s %q in API group %s", user.Username, Subresource, name, v1alpha2.GroupVersion.Group), http.StatusForbidden)
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
	d := b.Status.ContentDigest
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

// authorize reviews token and its access to Bundle name; user is nil when
// the token is not valid.
func (s *Server) authorize(ctx context.Context, token, name string) (*authenticationv1.UserInfo, bool, error) {
	key := sha256.Sum256([]byte(token))
	s.mu.Lock()
	rv, cached := s.reviews[key]
	if cached && time.Now().After(rv.expires) {
		cached = false
	}
	if cached {
		// Copy: other requests may read the cached map concurrently.
		allowed := make(map[string]bool, len(rv.allowed)+1)
		for k, v := range rv.allowed {
			allowed[k] = v
		}
		rv.allowed = allowed
	}
	s.mu.Unlock()
	if !cached {
		tr, err := s.kube.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
			Spec: authenticationv1.TokenReviewSpec{Token: token},
		}, metav1.CreateOptions{})
		if err != nil {
			return nil, false, fmt.Errorf("TokenReview: %w", err)
		}
		rv = review{user: tr.Status.User, ok: tr.Status.Authenticated, allowed: map[string]bool{}, expires: time.Now().Add(reviewTTL)}
	}
	if !rv.ok {
		s.remember(key, rv)
		return nil, false, nil
	}
	allowed, known := rv.allowed[name]
	if !known {
		extra := map[string]authorizationv1.ExtraValue{}
		for k, v := range rv.user.Extra {
			extra[k] = authorizationv1.ExtraValue(v)
		}
		sar, err := s.kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User: rv.user.Username, Groups: rv.user.Groups, UID: rv.user.UID, Extra: extra,
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Group: v1alpha2.GroupVersion.Group, Resource: "bundles", Subresource: Subresource, Verb: "get", Name: name,
				},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			return nil, false, fmt.Errorf("SubjectAccessReview: %w", err)
		}
		allowed = sar.Status.Allowed
		rv.allowed[name] = allowed
	}
	s.remember(key, rv)
	user := rv.user
	return &user, allowed, nil
}

func (s *Server) remember(key [32]byte, rv review) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Bound the cache: drop expired entries when it grows.
	if len(s.reviews) > 1024 {
		now := time.Now()
		for k, v := range s.reviews {
			if now.After(v.expires) {
				delete(s.reviews, k)
			}
		}
	}
	s.reviews[key] = rv
}
