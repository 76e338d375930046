package contentserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/upload"
)

// UploadPathPrefix is where archives are uploaded: PUT UploadPathPrefix +
// DIGEST ("sha256:<hex>" of the .tar.gz), the archive as the body.
const UploadPathPrefix = "/uploads/"

// UploadResource is the virtual RBAC resource whose create verb grants
// uploading: `{apiGroups: [core.rukpak.io], resources: [uploads], verbs:
// [create]}`. No such API object exists; the content server asks a
// SubjectAccessReview for it.
const UploadResource = "uploads"

// Defaults of WithUploads.
const (
	// DefaultMaxConcurrentUploads is how many uploads the server takes at
	// once; more are refused with 429 Too Many Requests.
	DefaultMaxConcurrentUploads = 4
	// DefaultUploadTimeout bounds reading one upload's body.
	DefaultUploadTimeout = 5 * time.Minute
)

// UploadResult is the JSON body of a successful upload.
type UploadResult struct {
	// Digest is the stored archive's digest, "sha256:<hex>".
	Digest string `json:"digest"`
	// Size is the archive's size in bytes.
	Size int64 `json:"size"`
	// Chunks is how many ConfigMaps hold the archive.
	Chunks int `json:"chunks"`
}

// UploadURL returns where the archive digest is uploaded under base (the
// server's external URL).
func UploadURL(base, digest string) string {
	return strings.TrimRight(base, "/") + UploadPathPrefix + digest
}

// serveUpload stores the request body as the upload digest, for a user
// allowed to create uploads, and records the user as one of its uploaders:
// 200 with an UploadResult when it is stored (or was already by this user:
// nothing is read), 400 for a malformed digest, 401/403 as for content,
// 409 when the upload records upload.MaxUploaders others, 413 when larger
// than the store's limit, 422 when the body's digest is another (also for
// a digest stored by someone else: the digest alone is no proof of having
// the bytes), 429 when too many uploads run.
func (s *Server) serveUpload(w http.ResponseWriter, r *http.Request, digest string) {
	if r.Method != http.MethodPut {
		w.Header().Set("Allow", http.MethodPut)
		http.Error(w, "only PUT", http.StatusMethodNotAllowed)
		return
	}
	if _, err := upload.ParseDigest(digest); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	token, user, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	log := s.log.WithValues("user", user.Username, "digest", digest)
	attrs := authorizationv1.ResourceAttributes{Group: v1alpha2.GroupVersion.Group, Resource: UploadResource, Verb: "create"}
	if !s.authorize(w, r, token, user, attrs, fmt.Sprintf("user %q may not create %s in API group %s",
		user.Username, UploadResource, v1alpha2.GroupVersion.Group)) {
		log.Info("upload refused: not allowed")
		return
	}
	limit := s.uploads.MaxSize()
	if r.ContentLength > limit {
		log.Info("upload refused: too large", "size", r.ContentLength)
		http.Error(w, fmt.Sprintf("upload %s has %d bytes, more than the limit of %d", digest, r.ContentLength, limit), http.StatusRequestEntityTooLarge)
		return
	}
	select {
	case s.uploadSlots <- struct{}{}:
		defer func() { <-s.uploadSlots }()
	default:
		w.Header().Set("Retry-After", strconv.Itoa(5))
		http.Error(w, fmt.Sprintf("%d uploads are in progress, the most this server takes at once: retry later", cap(s.uploadSlots)), http.StatusTooManyRequests)
		return
	}
	// A client that stops sending must not hold its slot for ever.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.uploadTimeout))
	err := s.uploads.Put(r.Context(), r.Body, digest, user.Username)
	var tooLarge *upload.SizeError
	var mismatch *upload.DigestError
	var tooMany *upload.UploadersError
	switch {
	case errors.As(err, &tooMany):
		log.Info("upload refused: too many uploaders")
		http.Error(w, tooMany.Error(), http.StatusConflict)
		return
	case errors.As(err, &tooLarge):
		log.Info("upload refused: too large")
		http.Error(w, fmt.Sprintf("upload %s: %v", digest, tooLarge), http.StatusRequestEntityTooLarge)
		return
	case errors.As(err, &mismatch):
		log.Info("upload refused: digest mismatch", "actual", mismatch.Got)
		http.Error(w, fmt.Sprintf("upload %s: %v", digest, mismatch), http.StatusUnprocessableEntity)
		return
	case err != nil:
		log.Error(err, "upload failed")
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	info, err := s.uploads.Stat(r.Context(), digest)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	log.Info("upload stored", "size", info.Size, "chunks", info.Chunks)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(UploadResult{Digest: info.Digest, Size: info.Size, Chunks: info.Chunks})
}
