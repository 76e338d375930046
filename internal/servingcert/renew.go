package servingcert

import (
	"bytes"
	"crypto/x509"
	"errors"
	"time"
)

// State is what Renew decided for one Secret.
type State struct {
	// Data is the Secret data to write.
	Data map[string][]byte
	// Changed is set when Data differs from what Renew was given.
	Changed bool
	// Next is when Renew would decide something else for the same data:
	// a certificate due for renewal, a new CA ready to sign, an old CA to
	// drop.
	Next time.Time
}

// Renew returns the Secret data to keep for a serving certificate for
// hosts at t, given the data the Secret holds now (nil if it does not
// exist). Data that is still good is returned unchanged. Otherwise, in
// this order:
//
//   - unreadable or missing data, or an expired CA: a new CA and serving
//     certificate (nothing to protect);
//   - a CA due for renewal (o.RenewBefore plus o.Overlap before its
//     expiry): a new CA, trusted next to the old one; the serving
//     certificate is kept unless clients cannot use it at all (expired,
//     for other hosts, not signed by a trusted CA), so that every client
//     trusts the new CA before a server presents a certificate it signed;
//   - a serving certificate clients cannot use: a new one signed by the
//     newest CA;
//   - a serving certificate due for renewal, or signed by an older CA,
//     once the newest CA has been trusted for o.Overlap: a new one signed
//     by the newest CA.
//
// CAs other than the newest are dropped from the trusted list when they
// expire.
func Renew(data map[string][]byte, hosts []string, commonName string, t time.Time, o Options) (State, error) {
	trusted, signer, err := parseCA(data)
	if err != nil || !t.Before(signer.Cert.NotAfter) {
		return fresh(hosts, commonName, t, o)
	}
	kept := []*x509.Certificate{signer.Cert}
	for _, c := range trusted[1:] {
		if c.IsCA && t.Before(c.NotAfter) {
			kept = append(kept, c)
		}
	}
	serving, servingErr := ParseKeyPair(data[KeyCert], data[KeyKey])
	// usable: clients trust it now; good: and it need not be replaced.
	usable := servingErr == nil && !t.Before(serving.Cert.NotBefore) && t.Before(serving.Cert.NotAfter) &&
		SameHosts(serving.Cert, hosts) && signedByOne(serving.Cert, kept)
	good := usable && !due(serving.Cert, t, o.RenewBefore)
	changed := len(kept) != len(trusted)
	switch ready := !t.Before(readyAt(signer.Cert, o)); {
	case due(signer.Cert, t, o.RenewBefore+o.Overlap):
		ca, err := NewCA(commonName, t, o.CAValidity)
		if err != nil {
			return State{}, err
		}
		signer, kept, changed = ca, append([]*x509.Certificate{ca.Cert}, kept...), true
		if !usable {
			serving = nil
		}
	case !usable, !good && ready, serving.Cert.CheckSignatureFrom(signer.Cert) != nil && ready:
		// A usable certificate signed by a CA clients may not trust yet
		// is kept until they do.
		serving = nil
	}
	if serving == nil {
		if serving, err = NewServing(signer, hosts, t, o.ServingValidity); err != nil {
			return State{}, err
		}
		changed = true
	}
	if !changed {
		return State{Data: data, Next: next(t, signer.Cert, serving.Cert, kept, o)}, nil
	}
	out, err := encode(signer, serving, kept)
	if err != nil {
		return State{}, err
	}
	return State{Data: out, Changed: true, Next: next(t, signer.Cert, serving.Cert, kept, o)}, nil
}

// fresh returns data with a new CA and serving certificate.
func fresh(hosts []string, commonName string, t time.Time, o Options) (State, error) {
	ca, err := NewCA(commonName, t, o.CAValidity)
	if err != nil {
		return State{}, err
	}
	serving, err := NewServing(ca, hosts, t, o.ServingValidity)
	if err != nil {
		return State{}, err
	}
	out, err := encode(ca, serving, []*x509.Certificate{ca.Cert})
	if err != nil {
		return State{}, err
	}
	return State{Data: out, Changed: true, Next: next(t, ca.Cert, serving.Cert, []*x509.Certificate{ca.Cert}, o)}, nil
}

// parseCA returns the trusted CAs of data and the newest with its key.
func parseCA(data map[string][]byte) ([]*x509.Certificate, *KeyPair, error) {
	trusted, err := ParseCerts(data[KeyCA])
	if err != nil {
		return nil, nil, err
	}
	signer, err := ParseKeyPair(EncodeCert(trusted[0]), data[KeyCAKey])
	if err != nil {
		return nil, nil, err
	}
	if !signer.Cert.IsCA {
		return nil, nil, errNotCA
	}
	return trusted, signer, nil
}

// errNotCA is returned for a signing certificate that is not a CA.
var errNotCA = errors.New("the newest trusted certificate is not a CA")

// due reports whether cert is not yet valid at t or expires within before.
func due(cert *x509.Certificate, t time.Time, before time.Duration) bool {
	return t.Before(cert.NotBefore) || !t.Add(before).Before(cert.NotAfter)
}

// signedByOne reports whether cert is signed by one of cas.
func signedByOne(cert *x509.Certificate, cas []*x509.Certificate) bool {
	for _, ca := range cas {
		if cert.CheckSignatureFrom(ca) == nil {
			return true
		}
	}
	return false
}

// readyAt is when a CA has been trusted long enough to sign.
func readyAt(ca *x509.Certificate, o Options) time.Time {
	return ca.NotBefore.Add(Backdate + o.Overlap)
}

// next is the first time after t at which Renew decides something else:
// the CA or the serving certificate due, the serving certificate expired,
// the newest CA ready to sign, an older CA expired.
func next(t time.Time, signer, serving *x509.Certificate, trusted []*x509.Certificate, o Options) time.Time {
	times := []time.Time{
		signer.NotAfter.Add(-o.RenewBefore - o.Overlap),
		serving.NotAfter.Add(-o.RenewBefore),
		serving.NotAfter,
		readyAt(signer, o),
	}
	for _, c := range trusted[1:] {
		times = append(times, c.NotAfter)
	}
	var n time.Time
	for _, c := range times {
		if c.After(t) && (n.IsZero() || c.Before(n)) {
			n = c
		}
	}
	return n
}

// encode returns the Secret data of signer, serving and the trusted CAs.
func encode(signer, serving *KeyPair, trusted []*x509.Certificate) (map[string][]byte, error) {
	_, caKey, err := signer.Encode()
	if err != nil {
		return nil, err
	}
	cert, key, err := serving.Encode()
	if err != nil {
		return nil, err
	}
	var bundle bytes.Buffer
	for _, c := range trusted {
		bundle.Write(EncodeCert(c))
	}
	return map[string][]byte{
		KeyCert:  cert,
		KeyKey:   key,
		KeyCA:    bundle.Bytes(),
		KeyCAKey: caKey,
		KeyOLMCA: bundle.Bytes(),
	}, nil
}
