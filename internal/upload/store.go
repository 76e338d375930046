package upload

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// Store keeps uploads as chunk and manifest ConfigMaps in one namespace.
// Several Stores (CLIs, manager replicas) may share a namespace.
type Store struct {
	client    client.Client
	reader    client.Reader
	namespace string

	grace       time.Duration
	maxSize     int64
	concurrency int
	now         func() time.Time
}

// Option configures a Store.
type Option func(*Store)

// WithGracePeriod sets how long GC spares chunks and manifests after they
// were written or reused (DefaultGracePeriod). It must exceed the time an
// upload takes; Put refreshes its chunks when half of it has passed.
func WithGracePeriod(d time.Duration) Option { return func(s *Store) { s.grace = d } }

// WithMaxSize sets the largest archive Put accepts and Open reads
// (DefaultMaxSize).
func WithMaxSize(n int64) Option { return func(s *Store) { s.maxSize = n } }

// WithConcurrency sets how many chunks Put writes at once
// (DefaultConcurrency).
func WithConcurrency(n int) Option { return func(s *Store) { s.concurrency = max(n, 1) } }

// NewStore returns a Store in namespace that writes with c (as
// FieldManager) and reads with reader, which must not be cached (a
// manager's API reader).
func NewStore(c client.Client, reader client.Reader, namespace string, opts ...Option) *Store {
	s := &Store{
		client: client.WithFieldOwner(c, FieldManager), reader: reader, namespace: namespace,
		grace: DefaultGracePeriod, maxSize: DefaultMaxSize, concurrency: DefaultConcurrency, now: time.Now,
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// MaxSize is the largest archive Put accepts.
func (s *Store) MaxSize() int64 { return s.maxSize }

// Stat describes the stored upload digest. A missing upload is a terminal
// SourceNotFound failure.
func (s *Store) Stat(ctx context.Context, digest string) (Info, error) {
	m, err := s.manifest(ctx, digest)
	if err != nil {
		return Info{}, err
	}
	return m.info(), nil
}

// manifest reads and parses the manifest of digest.
func (s *Store) manifest(ctx context.Context, digest string) (*manifest, error) {
	hex, err := ParseDigest(digest)
	if err != nil {
		return nil, failure.New(v1alpha2.ReasonUnpackFailed, "%v", err)
	}
	cm := &corev1.ConfigMap{}
	err = s.reader.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: ManifestName(hex)}, cm)
	if apierrors.IsNotFound(err) {
		return nil, failure.New(v1alpha2.ReasonSourceNotFound, "upload %s not found; run `rukpakctl run` again", digest)
	}
	if err != nil {
		return nil, fmt.Errorf("reading upload %s: %w", digest, err)
	}
	m, err := parseManifest(cm)
	if err != nil {
		return nil, failure.New(v1alpha2.ReasonUnpackFailed, "upload %s: %v", digest, err)
	}
	m.uploaders = uploadersOf(cm)
	if m.digest != digest {
		return nil, failure.New(v1alpha2.ReasonDigestMismatch, "upload %s: manifest %s lists digest %s", digest, cm.Name, m.digest)
	}
	if m.size > s.maxSize {
		return nil, failure.New(v1alpha2.ReasonUnpackFailed, "upload %s has %d bytes, more than the limit of %d", digest, m.size, s.maxSize)
	}
	return m, nil
}

// touch marks the ConfigMap name as used now, which restarts its grace
// period and changes its resourceVersion (so that a GC that listed it before
// cannot delete it), and sets the annotations extra (an uploader). Only
// metadata is sent and received.
func (s *Store) touch(ctx context.Context, name string, extra map[string]string) error {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	obj.Namespace, obj.Name = s.namespace, name
	annotations := map[string]string{annotationUsed: s.now().UTC().Format(time.RFC3339Nano)}
	maps.Copy(annotations, extra)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return fmt.Errorf("marking ConfigMap %s/%s as used: %w", s.namespace, name, err)
	}
	if err := s.client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("marking ConfigMap %s/%s as used: %w", s.namespace, name, err)
	}
	return nil
}

// fresh reports whether obj was created or last used within the grace
// period.
func (s *Store) fresh(obj metav1.Object) bool {
	last := obj.GetCreationTimestamp().Time
	if t, err := time.Parse(time.RFC3339Nano, obj.GetAnnotations()[annotationUsed]); err == nil && t.After(last) {
		last = t
	}
	return s.now().Sub(last) < s.grace
}
