package renderstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// header is what chunk 0's annotations say of a render.
type header struct {
	// sum is the hex sha256 of the whole payload.
	sum    string
	chunks int
	uid    types.UID
}

var secretGVK = corev1.SchemeGroupVersion.WithKind("Secret")

// head reads chunk 0's metadata. No chunk 0 is ErrNotFound, unless other
// chunks of the render are there: then chunk 0 is missing.
func (s *Store) head(ctx context.Context, bundle string) (header, error) {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(secretGVK)
	err := s.r.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: chunkName(bundle, 0)}, m)
	if apierrors.IsNotFound(err) {
		others, err := s.list(ctx, bundle)
		if err != nil {
			return header{}, err
		}
		if len(others) > 0 {
			return header{}, corrupt(bundle, 0, ProblemMissing, "Secret %s/%s is missing (%d other chunks are there)", s.namespace, chunkName(bundle, 0), len(others))
		}
		return header{}, fmt.Errorf("render of bundle %s: %w", bundle, ErrNotFound)
	}
	if err != nil {
		return header{}, fmt.Errorf("reading render chunk %s/%s: %w", s.namespace, chunkName(bundle, 0), err)
	}
	a := m.Annotations
	if a[annotationBundle] != bundle {
		return header{}, corrupt(bundle, 0, ProblemMismatch, "Secret %s/%s is annotated for bundle %q", s.namespace, m.Name, a[annotationBundle])
	}
	n, err := strconv.Atoi(a[annotationChunks])
	if err != nil || n < 1 {
		return header{}, corrupt(bundle, 0, ProblemInvalid, "bad chunk count %q", a[annotationChunks])
	}
	if n > s.opts.MaxChunks {
		return header{}, corrupt(bundle, 0, ProblemTooLarge, "%d chunks, over the limit of %d", n, s.opts.MaxChunks)
	}
	if !isHexSum(a[annotationSHA256]) {
		return header{}, corrupt(bundle, 0, ProblemInvalid, "bad payload checksum %q", a[annotationSHA256])
	}
	return header{sum: a[annotationSHA256], chunks: n, uid: types.UID(a[annotationBundleUID])}, nil
}

// readPayload reads the h.chunks chunks of bundle's render and returns the
// payload they hold, checking each chunk and the whole against their
// checksums.
func (s *Store) readPayload(ctx context.Context, bundle string, h header) ([]byte, error) {
	var data []byte
	for i := range h.chunks {
		name := chunkName(bundle, i)
		sec := &corev1.Secret{}
		err := s.r.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: name}, sec)
		if apierrors.IsNotFound(err) {
			return nil, corrupt(bundle, i, ProblemMissing, "Secret %s/%s of %d chunks is missing", s.namespace, name, h.chunks)
		}
		if err != nil {
			return nil, fmt.Errorf("reading render chunk %s/%s: %w", s.namespace, name, err)
		}
		chunk, err := s.checkChunk(bundle, i, h, sec)
		if err != nil {
			return nil, err
		}
		data = append(data, chunk...)
	}
	if got := sha256.Sum256(data); hex.EncodeToString(got[:]) != h.sum {
		return nil, corrupt(bundle, -1, ProblemMismatch, "the payload's sha256 is %x, the chunks say %s", got, h.sum)
	}
	return data, nil
}

// checkChunk returns the bytes of sec, chunk i of bundle's render, if it
// is one of the save h describes and its bytes match its checksum.
func (s *Store) checkChunk(bundle string, i int, h header, sec *corev1.Secret) ([]byte, error) {
	where := s.namespace + "/" + sec.Name
	if sec.Type != SecretType {
		return nil, corrupt(bundle, i, ProblemInvalid, "Secret %s is of type %q, not %q", where, sec.Type, SecretType)
	}
	a := sec.Annotations
	if a[annotationBundle] != bundle || a[annotationBundleUID] != string(h.uid) ||
		a[annotationSHA256] != h.sum || a[annotationChunks] != strconv.Itoa(h.chunks) || a[annotationChunk] != strconv.Itoa(i) {
		return nil, corrupt(bundle, i, ProblemMismatch, "Secret %s is of another save (chunk %s of %s, payload sha256 %s, bundle %s uid %s)",
			where, a[annotationChunk], a[annotationChunks], a[annotationSHA256], a[annotationBundle], a[annotationBundleUID])
	}
	chunk, ok := sec.Data[dataKey]
	if !ok || len(sec.Data) != 1 {
		return nil, corrupt(bundle, i, ProblemInvalid, "Secret %s holds keys %v, want only %q", where, keys(sec.Data), dataKey)
	}
	if len(chunk) > s.chunkSize {
		return nil, corrupt(bundle, i, ProblemInvalid, "Secret %s holds %d bytes, over the chunk size %d", where, len(chunk), s.chunkSize)
	}
	if got := sha256.Sum256(chunk); hex.EncodeToString(got[:]) != a[annotationChunkSHA256] {
		return nil, corrupt(bundle, i, ProblemMismatch, "the bytes of Secret %s were changed (sha256 %x, annotated %s)", where, got, a[annotationChunkSHA256])
	}
	return chunk, nil
}

// list returns the metadata of the chunks of bundle's render there are.
func (s *Store) list(ctx context.Context, bundle string) ([]metav1.PartialObjectMetadata, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := s.r.List(ctx, list, client.InNamespace(s.namespace), client.MatchingLabels{LabelRenderOf: labelValue(bundle)}); err != nil {
		return nil, fmt.Errorf("listing render chunks of bundle %s: %w", bundle, err)
	}
	var out []metav1.PartialObjectMetadata
	for _, m := range list.Items {
		// The name tells: a shortened label value may be another long
		// name's, and a chunk's annotations may have been changed.
		if _, ok := chunkIndex(bundle, m.Name); ok {
			m.SetGroupVersionKind(secretGVK)
			out = append(out, m)
		}
	}
	return out, nil
}

func isHexSum(s string) bool {
	b, err := hex.DecodeString(s)
	return err == nil && len(b) == sha256.Size && hex.EncodeToString(b) == s
}

func keys(m map[string][]byte) []string {
	return slices.Sorted(maps.Keys(m))
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
