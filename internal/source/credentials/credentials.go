// Package credentials reads what sources need to reach their servers and
// check what they fetch — Secrets with credentials, CA bundles and keys,
// ConfigMaps with trust roots — from the system namespace only,
// so that a cluster-scoped BundleDeployment cannot be used to read another
// namespace's Secrets, and turns them into TLS configurations.
package credentials

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// CAKey is the key of a CA Secret holding PEM certificates.
const CAKey = "ca.crt"

// Reader reads Secrets and ConfigMaps of one namespace.
type Reader struct {
	c         client.Reader
	namespace string
}

// NewReader returns a Reader of Secrets and ConfigMaps in namespace
// (rukpak-system).
func NewReader(c client.Reader, namespace string) *Reader {
	return &Reader{c: c, namespace: namespace}
}

// Namespace is the namespace Secrets and ConfigMaps are read from.
func (r *Reader) Namespace() string { return r.namespace }

// Secret returns the Secret ref names. A missing Secret is a terminal
// SourceNotFound failure naming it (it is retried when the spec changes).
func (r *Reader) Secret(ctx context.Context, ref *v1alpha2.LocalObjectReference) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	if err := r.c.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: ref.Name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, failure.New(v1alpha2.ReasonSourceNotFound, "Secret %s/%s not found (source Secrets are read from %s only)", r.namespace, ref.Name, r.namespace)
		}
		return nil, fmt.Errorf("getting Secret %s/%s: %w", r.namespace, ref.Name, err)
	}
	return s, nil
}

// ConfigMap returns the ConfigMap ref names. A missing ConfigMap is a
// terminal SourceNotFound failure naming it, as for a Secret.
func (r *Reader) ConfigMap(ctx context.Context, ref *v1alpha2.LocalObjectReference) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{}
	if err := r.c.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: ref.Name}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, failure.New(v1alpha2.ReasonSourceNotFound, "ConfigMap %s/%s not found (source ConfigMaps are read from %s only)", r.namespace, ref.Name, r.namespace)
		}
		return nil, fmt.Errorf("getting ConfigMap %s/%s: %w", r.namespace, ref.Name, err)
	}
	return cm, nil
}

// TLSConfig returns the TLS configuration for a server: the system roots
// plus the PEM certificates under ca.crt of the Secret caSecret names (if
// any), or no verification at all when insecure is set.
func (r *Reader) TLSConfig(ctx context.Context, caSecret *v1alpha2.LocalObjectReference, insecure bool) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if insecure {
		cfg.InsecureSkipVerify = true //nolint:gosec // the user asked for it explicitly (insecureSkipTLSVerify)
		return cfg, nil
	}
	if caSecret == nil {
		return cfg, nil
	}
	s, err := r.Secret(ctx, caSecret)
	if err != nil {
		return nil, err
	}
	pem, ok := s.Data[CAKey]
	if !ok {
		return nil, failure.New(v1alpha2.ReasonUnpackFailed, "Secret %s/%s has no %s key", r.namespace, caSecret.Name, CAKey)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, failure.New(v1alpha2.ReasonUnpackFailed, "Secret %s/%s: %s holds no PEM certificate", r.namespace, caSecret.Name, CAKey)
	}
	cfg.RootCAs = pool
	return cfg, nil
}
