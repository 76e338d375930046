package crdwebhook

import (
	"context"
	"crypto/x509"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/internal/servingcert"
)

const (
	// caValidity is how long a new CA is valid.
	caValidity = 10 * 365 * 24 * time.Hour
	// servingValidity is how long a new serving certificate is valid.
	servingValidity = 365 * 24 * time.Hour
	// renewBefore is how long before expiry a certificate is replaced.
	renewBefore = 30 * 24 * time.Hour

	// Secret keys besides corev1.TLSCertKey and corev1.TLSPrivateKeyKey.
	keyCACert = "ca.crt"
	keyCAKey  = "ca.key"

	// caCommonName names the CA.
	caCommonName = "rukpak-crd-webhook-ca"
)

// now is the clock of certificate decisions; tests replace it.
var now = time.Now

// EnsureCertificate returns a serving certificate and key for hosts (DNS
// names or IP addresses) and the PEM of the CA that signed it, all kept in
// the Secret namespace/secretName so that replicas share them. It creates
// the Secret when missing; it replaces the serving certificate when it
// expires within 30 days, is not for exactly hosts or was not signed by the
// CA, and the CA too when the CA expires within 30 days. When another
// replica wins a race to create or update the Secret, it reads again.
func EnsureCertificate(ctx context.Context, c client.Client, namespace, secretName string, hosts []string) (certPEM, keyPEM, caPEM []byte, err error) {
	if len(hosts) == 0 {
		return nil, nil, nil, fmt.Errorf("ensuring certificate: no hosts")
	}
	const attempts = 5
	for range attempts {
		secret := &corev1.Secret{}
		err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: secretName}, secret)
		exists := err == nil
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, nil, nil, fmt.Errorf("getting Secret %s/%s: %w", namespace, secretName, err)
		}
		data, changed, err := renew(secret.Data, hosts, now())
		if err != nil {
			return nil, nil, nil, err
		}
		if !changed {
			return data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey], data[keyCACert], nil
		}
		secret.Data = data
		if !exists {
			secret.ObjectMeta = metav1.ObjectMeta{Namespace: namespace, Name: secretName}
			secret.Type = corev1.SecretTypeTLS
			err = c.Create(ctx, secret)
		} else {
			err = c.Update(ctx, secret)
		}
		switch {
		case err == nil:
			return data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey], data[keyCACert], nil
		case apierrors.IsAlreadyExists(err), apierrors.IsConflict(err):
			continue
		default:
			return nil, nil, nil, fmt.Errorf("writing Secret %s/%s: %w", namespace, secretName, err)
		}
	}
	return nil, nil, nil, fmt.Errorf("writing Secret %s/%s: still conflicting after %d attempts", namespace, secretName, attempts)
}

// renew returns the Secret data to keep: data itself with changed false when
// it is still good for hosts at t, else new data with the parts replaced.
func renew(data map[string][]byte, hosts []string, t time.Time) (map[string][]byte, bool, error) {
	ca, caErr := servingcert.ParseKeyPair(data[keyCACert], data[keyCAKey])
	if caErr != nil || expiresSoon(ca.Cert, t) || !ca.Cert.IsCA {
		newCA, err := servingcert.NewCA(caCommonName, t, caValidity)
		if err != nil {
			return nil, false, err
		}
		ca = newCA
	} else if serving, err := servingcert.ParseKeyPair(data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey]); err == nil &&
		!expiresSoon(serving.Cert, t) && servingcert.SameHosts(serving.Cert, hosts) && serving.Cert.CheckSignatureFrom(ca.Cert) == nil {
		return data, false, nil
	}
	serving, err := servingcert.NewServing(ca, hosts, t, servingValidity)
	if err != nil {
		return nil, false, err
	}
	caCert, caKey, err := ca.Encode()
	if err != nil {
		return nil, false, err
	}
	cert, key, err := serving.Encode()
	if err != nil {
		return nil, false, err
	}
	return map[string][]byte{
		corev1.TLSCertKey:       cert,
		corev1.TLSPrivateKeyKey: key,
		keyCACert:               caCert,
		keyCAKey:                caKey,
	}, true, nil
}

// expiresSoon reports whether cert is not yet valid at t or expires within
// renewBefore of t.
func expiresSoon(cert *x509.Certificate, t time.Time) bool {
	return t.Before(cert.NotBefore) || t.Add(renewBefore).After(cert.NotAfter)
}
