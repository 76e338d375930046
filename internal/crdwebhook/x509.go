package crdwebhook

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"
)

// keyPair is a parsed certificate with its private key.
type keyPair struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// newCA makes a self-signed CA valid from t for validity.
func newCA(t time.Time, validity time.Duration) (*keyPair, error) {
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "rukpak-crd-webhook-ca"},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	return issue(tmpl, nil, t, validity)
}

// newServing makes a serving certificate for hosts signed by ca, valid from
// t for validity.
func newServing(ca *keyPair, hosts []string, t time.Time, validity time.Duration) (*keyPair, error) {
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: hosts[0]},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return issue(tmpl, ca, t, validity)
}

// issue signs tmpl with a new ECDSA P-256 key, by parent or by itself when
// parent is nil. The certificate is backdated by a minute for clock skew.
func issue(tmpl *x509.Certificate, parent *keyPair, t time.Time, validity time.Duration) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generating serial number: %w", err)
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = t.Add(-time.Minute)
	tmpl.NotAfter = t.Add(validity)
	signerCert, signerKey := tmpl, key
	if parent != nil {
		signerCert, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, &key.PublicKey, signerKey)
	if err != nil {
		return nil, fmt.Errorf("signing certificate %s: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing certificate %s: %w", tmpl.Subject.CommonName, err)
	}
	return &keyPair{cert: cert, key: key}, nil
}

// encode returns the PEM of the certificate and of the key.
func (kp *keyPair) encode() (certPEM, keyPEM []byte, err error) {
	der, err := x509.MarshalECPrivateKey(kp.key)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: kp.cert.Raw}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// parseKeyPair parses PEM written by encode.
func parseKeyPair(certPEM, keyPEM []byte) (*keyPair, error) {
	cb, _ := pem.Decode(certPEM)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("no certificate PEM")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing certificate: %w", err)
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil || kb.Type != "EC PRIVATE KEY" {
		return nil, fmt.Errorf("no EC private key PEM")
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing key: %w", err)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("key does not match certificate")
	}
	return &keyPair{cert: cert, key: key}, nil
}

// sameHosts reports whether cert is for exactly hosts.
func sameHosts(cert *x509.Certificate, hosts []string) bool {
	have := slices.Clone(cert.DNSNames)
	for _, ip := range cert.IPAddresses {
		have = append(have, ip.String())
	}
	want := make([]string, 0, len(hosts))
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			h = ip.String()
		}
		want = append(want, h)
	}
	slices.Sort(have)
	slices.Sort(want)
	return slices.Equal(slices.Compact(have), slices.Compact(want))
}
