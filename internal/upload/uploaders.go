package upload

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Who uploaded an upload. The content server authenticates every uploader
// and Put records the user name in the upload's manifest: one annotation
// per uploader, named UploaderAnnotationPrefix + the first 40 hex digits
// of the SHA-256 of the name, holding the name. A manifest is immutable
// only in its data, so a second uploader of the same bytes is added to it;
// with one key per uploader two of them never overwrite each other.
const (
	// UploaderAnnotationPrefix starts the annotation of each uploader of
	// a manifest.
	UploaderAnnotationPrefix = "uploader.core.rukpak.io/"
	// MaxUploaders is how many different users one upload records; more
	// are refused (UploadersError). Every one of them had to send the
	// whole archive.
	MaxUploaders = 64
)

// uploaderKey is the annotation that records user as an uploader.
func uploaderKey(user string) string {
	sum := sha256.Sum256([]byte(user))
	return UploaderAnnotationPrefix + hex.EncodeToString(sum[:])[:40]
}

// uploadersOf returns the uploaders a manifest records, sorted. Only
// annotations the Store wrote count: the key must be the one of its value
// and FieldManager must have set it (managedFields), so an annotation
// someone else added names no one.
func uploadersOf(obj metav1.Object) []string {
	var users []string
	for k, v := range obj.GetAnnotations() {
		if !strings.HasPrefix(k, UploaderAnnotationPrefix) || v == "" || k != uploaderKey(v) {
			continue
		}
		if !fieldSetBy(obj, "f:annotations", k, FieldManager) {
			continue
		}
		users = append(users, v)
	}
	slices.Sort(users)
	return users
}

// Uploaders returns the users who uploaded the upload digest (the user
// names the content server authenticated), sorted; an upload stored
// before uploaders were recorded has none. A missing upload is a terminal
// SourceNotFound failure, as for Stat.
func (s *Store) Uploaders(ctx context.Context, digest string) ([]string, error) {
	m, err := s.manifest(ctx, digest)
	if err != nil {
		return nil, err
	}
	return m.uploaders, nil
}

// UploadersError is the error of Put for a new uploader of an upload that
// records MaxUploaders already.
type UploadersError struct {
	// Digest is the upload's digest.
	Digest string
}

func (e *UploadersError) Error() string {
	return fmt.Sprintf("upload %s records %d uploaders already, the most it may: ask one of them, or an admin, to grant you verb \"use\" on uploads/%s instead",
		e.Digest, MaxUploaders, strings.TrimPrefix(e.Digest, digestPrefix))
}
