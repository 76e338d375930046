package contentserver

import (
	"context"
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/client-go/kubernetes"
)

// Audience is the audience of the tokens the server accepts: a token is
// valid only when the API server's TokenReview, asked for this audience,
// authenticates it and names the audience in its answer. Tokens for the API
// server itself (a kubeconfig's) or for other services are refused, and a
// token made for the content server is refused by the API server. Request
// one with `kubectl create token NAME --audience rukpak.io/content` (what
// rukpakctl --token-for does).
const Audience = "rukpak.io/content"

// reviewTTL is how long a token's review result is reused.
const reviewTTL = 10 * time.Second

// maxReviews bounds the cache of review results; past it, the least
// recently used is forgotten.
const maxReviews = 1024

// reviewer authenticates tokens with TokenReviews for one audience and
// authorizes their users with SubjectAccessReviews, caching both briefly
// per token.
type reviewer struct {
	kube     kubernetes.Interface
	audience string

	// reviews maps a token's digest to its review until the review
	// expires; newReviewer sets it.
	reviews *cache.LRUExpireCache
}

// newReviewer returns a reviewer for audience.
func newReviewer(kube kubernetes.Interface, audience string) *reviewer {
	return &reviewer{kube: kube, audience: audience, reviews: cache.NewLRUExpireCache(maxReviews)}
}

type review struct {
	user    authenticationv1.UserInfo
	ok      bool
	reason  string          // why the token is not valid
	allowed map[string]bool // access key → SubjectAccessReview result
	expires time.Time       // when the cache forgets the review
}

// tokenError is returned by authenticate for a token that is not valid.
type tokenError struct{ reason string }

func (e *tokenError) Error() string { return e.reason }

// authenticate reviews token for the reviewer's audience. A token that is
// not valid is a *tokenError saying why.
func (r *reviewer) authenticate(ctx context.Context, token string) (authenticationv1.UserInfo, error) {
	key := sha256.Sum256([]byte(token))
	rv, err := r.review(ctx, key, token)
	if err != nil {
		return authenticationv1.UserInfo{}, err
	}
	if !rv.ok {
		return authenticationv1.UserInfo{}, &tokenError{reason: rv.reason}
	}
	return rv.user, nil
}

// review returns the cached or a new review of token.
func (r *reviewer) review(ctx context.Context, key [32]byte, token string) (review, error) {
	if rv, cached := r.cached(key); cached {
		return rv, nil
	}
	tr, err := r.kube.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: []string{r.audience}},
	}, metav1.CreateOptions{})
	if err != nil {
		return review{}, fmt.Errorf("TokenReview: %w", err)
	}
	rv := review{user: tr.Status.User, allowed: map[string]bool{}, expires: time.Now().Add(reviewTTL)}
	switch {
	case !tr.Status.Authenticated:
		rv.reason = fmt.Sprintf("the token is not valid for audience %s", r.audience)
		if tr.Status.Error != "" {
			rv.reason += ": " + tr.Status.Error
		}
	case !slices.Contains(tr.Status.Audiences, r.audience):
		// An authenticator that ignores audiences must not let a token of
		// another audience through.
		rv.reason = fmt.Sprintf("the token is not valid for audience %s: it is for %v", r.audience, tr.Status.Audiences)
	default:
		rv.ok = true
	}
	r.remember(key, rv)
	return rv, nil
}

// allowed reports whether user may do attrs, asking a SubjectAccessReview
// unless the answer for token is cached.
func (r *reviewer) allowed(ctx context.Context, token string, user authenticationv1.UserInfo, attrs authorizationv1.ResourceAttributes) (bool, error) {
	key := sha256.Sum256([]byte(token))
	access := strings.Join([]string{attrs.Verb, attrs.Group, attrs.Resource, attrs.Subresource, attrs.Namespace, attrs.Name}, "/")
	rv, cached := r.cached(key)
	if ok, known := rv.allowed[access]; cached && known {
		return ok, nil
	}
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := r.kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user.Username, Groups: user.Groups, UID: user.UID, Extra: extra,
			ResourceAttributes: &attrs,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("SubjectAccessReview: %w", err)
	}
	if cached && time.Now().Before(rv.expires) {
		// Copy: other requests may read the cached map concurrently.
		rv.allowed = maps.Clone(rv.allowed)
		rv.allowed[access] = sar.Status.Allowed
		r.remember(key, rv)
	}
	return sar.Status.Allowed, nil
}

// remember caches rv for key until rv.expires.
func (r *reviewer) remember(key [32]byte, rv review) {
	r.reviews.Add(key, rv, time.Until(rv.expires))
}

// cached returns the review cached for key, if it has not expired.
func (r *reviewer) cached(key [32]byte) (review, bool) {
	v, ok := r.reviews.Get(key)
	if !ok {
		return review{}, false
	}
	return v.(review), true
}
