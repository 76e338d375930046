package configmaps

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/source"
	"github.com/rukpak/rukpak/pkg/failure"
)

// Source reads bundle content from immutable ConfigMaps in one namespace.
type Source struct {
	client    client.Reader
	namespace string
}

var _ source.Source = (*Source)(nil)

// New returns a Source reading ConfigMaps in namespace with c.
func New(c client.Reader, namespace string) *Source {
	return &Source{client: c, namespace: namespace}
}

// Resolve returns a copy of src with the digest of every ConfigMap filled
// in. A missing ConfigMap, a mutable one, or one whose content does not match
// a digest the user set, is a terminal failure.
func (s *Source) Resolve(ctx context.Context, src v1alpha2.BundleSource) (v1alpha2.BundleSource, error) {
	if len(src.ConfigMaps) == 0 {
		return v1alpha2.BundleSource{}, failure.New(v1alpha2.ReasonUnpackFailed, "source of type configMaps lists no ConfigMaps")
	}
	out := src.DeepCopy()
	for i := range out.ConfigMaps {
		ref := &out.ConfigMaps[i]
		cm, err := s.get(ctx, ref.ConfigMap.Name)
		if err != nil {
			return v1alpha2.BundleSource{}, err
		}
		if cm.Immutable == nil || !*cm.Immutable {
			return v1alpha2.BundleSource{}, failure.New(v1alpha2.ReasonSourceMutable,
				"ConfigMap %s must be immutable (set immutable: true): a revision is a fixed thing", s.key(ref.ConfigMap.Name))
		}
		d := Digest(cm)
		if ref.Digest != "" && ref.Digest != d {
			return v1alpha2.BundleSource{}, failure.New(v1alpha2.ReasonDigestMismatch,
				"ConfigMap %s has content digest %s, but the source requires %s", s.key(ref.ConfigMap.Name), d, ref.Digest)
		}
		ref.Digest = d
	}
	return *out, nil
}

// Unpack writes the keys of every ConfigMap of the pinned source src as
// files into dir, at dir/<path>/<key>. A ConfigMap whose content no longer
// matches its pinned digest (it was replaced), a key that is not a plain
// file name, and two ConfigMaps writing the same file are terminal failures.
func (s *Source) Unpack(ctx context.Context, src v1alpha2.BundleSource, dir string) error {
	w := newWriter(dir)
	for i, ref := range src.ConfigMaps {
		name := s.key(ref.ConfigMap.Name)
		if ref.Digest == "" {
			return fmt.Errorf("ConfigMap %s is not pinned to a digest: the source must be resolved before it is unpacked", name)
		}
		cm, err := s.get(ctx, ref.ConfigMap.Name)
		if err != nil {
			return err
		}
		if d := Digest(cm); d != ref.Digest {
			return failure.New(v1alpha2.ReasonDigestMismatch,
				"ConfigMap %s has content digest %s, but the revision pinned %s: it was replaced after the revision was made", name, d, ref.Digest)
		}
		if err := w.write(owner{entry: i, name: name}, ref.Path, cm); err != nil {
			return err
		}
	}
	return nil
}

// get reads the ConfigMap name; a missing one is a terminal failure.
func (s *Source) get(ctx context.Context, name string) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{}
	err := s.client.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: name}, cm)
	if apierrors.IsNotFound(err) {
		return nil, failure.New(v1alpha2.ReasonSourceNotFound, "ConfigMap %s not found", s.key(name))
	}
	if err != nil {
		return nil, fmt.Errorf("getting ConfigMap %s: %w", s.key(name), err)
	}
	return cm, nil
}

// key returns namespace/name of a ConfigMap, as messages name it.
func (s *Source) key(name string) string { return s.namespace + "/" + name }
