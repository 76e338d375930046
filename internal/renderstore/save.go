package renderstore

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/tenant"
)

// Save stores r as the render of bundle (r.Revision, when set, must be
// bundle's name; Save sets it and r.BundleUID from bundle).
//
// Saving again what is stored (even compressed by another build) writes
// nothing. A stored render that is corrupt, or of an older Bundle of the
// same name, is replaced. Another intact render of bundle stands: Save
// returns ErrExists (Delete it first to replace it). A render over the
// limits is ErrTooLarge. A new render that would take the tenant ctx
// carries past its bounds (Options.TenantRenders, Options.TenantQuota) is
// a *QuotaError (ErrQuota). Chunks are written last to first, so chunk 0,
// which Load reads first, is only there once the others are.
func (s *Store) Save(ctx context.Context, bundle *v1alpha2.Bundle, r Render) error {
	if bundle == nil || bundle.Name == "" || bundle.UID == "" {
		return errors.New("saving a render: the Bundle has no name or no UID")
	}
	if r.Revision != "" && r.Revision != bundle.Name {
		return fmt.Errorf("saving the render of %s as bundle %s's", r.Revision, bundle.Name)
	}
	r.Revision, r.BundleUID = bundle.Name, bundle.UID
	enc, err := encode(&r, s.opts.MaxSize)
	if err != nil {
		return err
	}
	chunks := split(enc.data, s.chunkSize)
	if len(chunks) > s.opts.MaxChunks {
		return fmt.Errorf("render of %s takes %d chunks, over the limit of %d: %w", bundle.Name, len(chunks), s.opts.MaxChunks, ErrTooLarge)
	}
	sum := hex.EncodeToString(enc.sum[:])
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	stored, err := s.list(ctx, bundle.Name)
	if err != nil {
		return err
	}
	if len(stored) > 0 {
		kept, err := s.keep(ctx, bundle, enc)
		if err != nil {
			return err
		}
		if kept != "" {
			s.remember(cacheKey{bundle: bundle.Name, sum: kept}, &r, enc.jsonSize)
			return nil
		}
		if err := s.deleteChunks(ctx, bundle.Name, stored); err != nil {
			return err
		}
	}
	size := int64(len(enc.data))
	if err := s.checkTenant(ctx, bundle.Name, size); err != nil {
		return err
	}
	t := tenant.From(ctx)
	for i := len(chunks) - 1; i >= 0; i-- {
		if err := s.create(ctx, s.chunk(bundle, t, i, chunks, sum, size)); err != nil {
			return fmt.Errorf("saving the render of bundle %s: %w", bundle.Name, err)
		}
	}
	s.addTenantBytes(t, size)
	s.remember(cacheKey{bundle: bundle.Name, sum: sum}, &r, enc.jsonSize)
	return nil
}

// keep decides about the render stored for bundle when enc is to be
// saved: it returns the stored payload's sha256 when that is enc's render
// already, "" when it is to be replaced (corrupt, or of an older Bundle),
// and ErrExists when it is another intact render.
func (s *Store) keep(ctx context.Context, bundle *v1alpha2.Bundle, enc *encoded) (string, error) {
	h, err := s.head(ctx, bundle.Name)
	if errors.Is(err, ErrCorrupt) || errors.Is(err, ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if h.uid != bundle.UID {
		return "", nil
	}
	data, err := s.readPayload(ctx, bundle.Name, h)
	if errors.Is(err, ErrCorrupt) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if h.sum == hex.EncodeToString(enc.sum[:]) {
		return h.sum, nil
	}
	d, err := s.decode(bundle.Name, h, data)
	if errors.Is(err, ErrCorrupt) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if d.jsonSum == enc.jsonSum {
		return h.sum, nil
	}
	return "", fmt.Errorf("saving the render of bundle %s (payload sha256 %x): one with payload sha256 %s is stored: %w",
		bundle.Name, enc.sum, h.sum, ErrExists)
}

// remember caches a copy of r, saved as key, unless it is too large to be
// cached.
func (s *Store) remember(key cacheKey, r *Render, size int64) {
	if s.cache.fits(size) {
		s.cache.add(key, r.clone(), size)
	}
}

// chunk returns the Secret of chunk i of chunks, bundle's render whose
// payload's sha256 is sum.
func (s *Store) chunk(bundle *v1alpha2.Bundle, t string, i int, chunks [][]byte, sum string, size int64) *corev1.Secret {
	chunkSum := sha256Hex(chunks[i])
	labels := map[string]string{LabelRenderOf: labelValue(bundle.Name), LabelTenant: tenantLabel(t)}
	if bd := bundle.Labels[v1alpha2.LabelBundleDeployment]; bd != "" {
		labels[v1alpha2.LabelBundleDeployment] = bd
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      chunkName(bundle.Name, i),
			Namespace: s.namespace,
			Labels:    labels,
			Annotations: map[string]string{
				annotationBundle:      bundle.Name,
				annotationBundleUID:   string(bundle.UID),
				annotationChunk:       strconv.Itoa(i),
				annotationChunks:      strconv.Itoa(len(chunks)),
				annotationChunkSHA256: chunkSum,
				annotationSHA256:      sum,
				annotationBytes:       strconv.FormatInt(size, 10),
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha2.GroupVersion.String(),
				Kind:       v1alpha2.BundleKind,
				Name:       bundle.Name,
				UID:        bundle.UID,
			}},
		},
		Type:      SecretType,
		Immutable: ptr.To(true),
		Data:      map[string][]byte{dataKey: chunks[i]},
	}
}

// create creates sec. One that exists already (another Save of the same
// Bundle at the same time) must hold the same bytes of the same save.
func (s *Store) create(ctx context.Context, sec *corev1.Secret) error {
	err := s.c.Create(ctx, sec)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	cur := &corev1.Secret{}
	if err := s.r.Get(ctx, client.ObjectKeyFromObject(sec), cur); err != nil {
		return fmt.Errorf("reading %s/%s: %w", sec.Namespace, sec.Name, err)
	}
	if cur.Type != sec.Type || cur.Annotations[annotationSHA256] != sec.Annotations[annotationSHA256] ||
		!bytes.Equal(cur.Data[dataKey], sec.Data[dataKey]) {
		return fmt.Errorf("another save wrote Secret %s/%s at the same time", sec.Namespace, sec.Name)
	}
	return nil
}
