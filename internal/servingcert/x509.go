package servingcert

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

// KeyPair is a parsed certificate with its private key.
type KeyPair struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// NewCA makes a self-signed CA named commonName, valid from t for
// validity.
func NewCA(commonName string, t time.Time, validity time.Duration) (*KeyPair, error) {
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: commonName},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	return issue(tmpl, nil, t, validity)
}

// NewServing makes a serving certificate for hosts (DNS names or IP
// addresses; at least one) signed by ca, valid from t for validity but
// never beyond the CA's own expiry.
func NewServing(ca *KeyPair, hosts []string, t time.Time, validity time.Duration) (*KeyPair, error) {
	if len(hosts) == 0 {
		return nil, fmt.Errorf("issuing serving certificate: no hosts")
	}
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
	if left := ca.Cert.NotAfter.Sub(t); left < validity {
		validity = left
	}
	return issue(tmpl, ca, t, validity)
}

// issue signs tmpl with a new ECDSA P-256 key, by parent or by itself when
// parent is nil. The certificate is backdated by a minute for clock skew.
func issue(tmpl *x509.Certificate, parent *KeyPair, t time.Time, validity time.Duration) (*KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generating serial number: %w", err)
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = t.Add(-Backdate)
	tmpl.NotAfter = t.Add(validity)
	signerCert, signerKey := tmpl, key
	if parent != nil {
		signerCert, signerKey = parent.Cert, parent.Key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, &key.PublicKey, signerKey)
	if err != nil {
		return nil, fmt.Errorf("signing certificate %s: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing certificate %s: %w", tmpl.Subject.CommonName, err)
	}
	return &KeyPair{Cert: cert, Key: key}, nil
}

// Backdate is how long before its issue a certificate is valid from, for
// clock skew.
const Backdate = time.Minute

// Encode returns the PEM of the certificate and of the key.
func (kp *KeyPair) Encode() (certPEM, keyPEM []byte, err error) {
	der, err := x509.MarshalECPrivateKey(kp.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding key: %w", err)
	}
	return EncodeCert(kp.Cert), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// EncodeCert returns the PEM of cert.
func EncodeCert(cert *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
}

// ParseKeyPair parses PEM written by Encode. The key must match the
// certificate.
func ParseKeyPair(certPEM, keyPEM []byte) (*KeyPair, error) {
	certs, err := ParseCerts(certPEM)
	if err != nil {
		return nil, err
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil || kb.Type != "EC PRIVATE KEY" {
		return nil, fmt.Errorf("no EC private key PEM")
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing key: %w", err)
	}
	if !key.PublicKey.Equal(certs[0].PublicKey) {
		return nil, fmt.Errorf("key does not match certificate")
	}
	return &KeyPair{Cert: certs[0], Key: key}, nil
}

// maxBundleCerts bounds the certificates ParseCerts reads.
const maxBundleCerts = 8

// ParseCerts parses one or more PEM certificates, in order; anything but
// CERTIFICATE blocks, or none at all, is an error.
func ParseCerts(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("PEM block %q is not a certificate", b.Type)
		}
		if len(out) == maxBundleCerts {
			return nil, fmt.Errorf("more than %d certificates", maxBundleCerts)
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parsing certificate: %w", err)
		}
		out = append(out, cert)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no certificate PEM")
	}
	return out, nil
}

// SameHosts reports whether cert is for exactly hosts.
func SameHosts(cert *x509.Certificate, hosts []string) bool {
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
