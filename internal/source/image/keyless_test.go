//go:build integration

package image

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// The OIDC issuer extensions of a Fulcio certificate: the current one (a
// DER UTF8String) and the deprecated one (the raw string).
var (
	oidIssuerV2     = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 8}
	oidIssuerLegacy = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 1}
)

const (
	testIssuer   = "https://issuer.test"
	testEmail    = "release@example.test"
	testWorkflow = "https://git.example.test/team/app/.github/workflows/release.yaml@refs/heads/main"
)

// testCA is a certificate authority issuing signing certificates, as
// Fulcio does: a root and an intermediate that signs the leaves.
type testCA struct {
	root, inter *x509.Certificate
	interKey    *ecdsa.PrivateKey
}

func newKeyPair(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func createCert(t *testing.T, tmpl, parent *x509.Certificate, pub any, signer *ecdsa.PrivateKey) *x509.Certificate {
	t.Helper()
	tmpl.SerialNumber = big.NewInt(time.Now().UnixNano())
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newCA(t *testing.T, name string) *testCA {
	t.Helper()
	rootKey, interKey := newKeyPair(t), newKeyPair(t)
	now := time.Now()
	rootTmpl := &x509.Certificate{Subject: pkix.Name{CommonName: name + " root"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	root := createCert(t, rootTmpl, rootTmpl, rootKey.Public(), rootKey)
	inter := createCert(t, &x509.Certificate{Subject: pkix.Name{CommonName: name + " intermediate"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}},
		root, interKey.Public(), rootKey)
	return &testCA{root: root, inter: inter, interKey: interKey}
}

// identity is what a signing certificate says about its holder.
type identity struct {
	issuer string
	legacy bool // the issuer in the deprecated extension
	email  string
	uri    string
}

// leaf issues a short-lived signing certificate for id to key, valid from
// notBefore for ten minutes.
func (ca *testCA) leaf(t *testing.T, key *ecdsa.PrivateKey, id identity, notBefore time.Time) *x509.Certificate {
	t.Helper()
	tmpl := &x509.Certificate{NotBefore: notBefore, NotAfter: notBefore.Add(10 * time.Minute),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}}
	if id.email != "" {
		tmpl.EmailAddresses = []string{id.email}
	}
	if id.uri != "" {
		u, err := url.Parse(id.uri)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.URIs = []*url.URL{u}
	}
	if id.legacy {
		tmpl.ExtraExtensions = []pkix.Extension{{Id: oidIssuerLegacy, Value: []byte(id.issuer)}}
	} else {
		v, err := asn1.MarshalWithParams(id.issuer, "utf8")
		if err != nil {
			t.Fatal(err)
		}
		tmpl.ExtraExtensions = []pkix.Extension{{Id: oidIssuerV2, Value: v}}
	}
	return createCert(t, tmpl, ca.inter, key.Public(), ca.interKey)
}

// testLog is a transparency log's signing key, as Rekor's.
type testLog struct {
	key *ecdsa.PrivateKey
	id  []byte // sha256 of the public key's DER
}

func newLog(t *testing.T) testLog {
	t.Helper()
	k := newKeyPair(t)
	der, err := x509.MarshalPKIXPublicKey(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	id := sha256.Sum256(der)
	return testLog{key: k, id: id[:]}
}

func pemOf(certs ...*x509.Certificate) string {
	var b strings.Builder
	for _, c := range certs {
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return b.String()
}

// trustedRoot is the trusted_root.json of cas and logs, in the format of
// sigstore's protobuf-specs TrustedRoot as `cosign trusted-root create`
// writes it.
func trustedRoot(t *testing.T, cas []*testCA, logs []testLog) string {
	t.Helper()
	start := time.Now().Add(-48 * time.Hour).UTC().Format(time.RFC3339)
	var tlogs, authorities []any
	for i, l := range logs {
		der, err := x509.MarshalPKIXPublicKey(l.key.Public())
		if err != nil {
			t.Fatal(err)
		}
		tlogs = append(tlogs, map[string]any{
			"baseUrl":       fmt.Sprintf("https://rekor%d.test", i),
			"hashAlgorithm": "SHA2_256",
			"publicKey":     map[string]any{"rawBytes": der, "keyDetails": "PKIX_ECDSA_P256_SHA_256", "validFor": map[string]any{"start": start}},
			"logId":         map[string]any{"keyId": l.id},
		})
	}
	for i, ca := range cas {
		authorities = append(authorities, map[string]any{
			"subject":   map[string]any{"organization": "test", "commonName": ca.root.Subject.CommonName},
			"uri":       fmt.Sprintf("https://fulcio%d.test", i),
			"certChain": map[string]any{"certificates": []any{map[string]any{"rawBytes": ca.inter.Raw}, map[string]any{"rawBytes": ca.root.Raw}}},
			"validFor":  map[string]any{"start": start},
		})
	}
	b, err := json.Marshal(map[string]any{
		"mediaType":              "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
		"tlogs":                  tlogs,
		"certificateAuthorities": authorities,
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func createConfigMap(t *testing.T, key, value string) string {
	t.Helper()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("trust"), Namespace: v1alpha2.SystemNamespace},
		Data:       map[string]string{key: value},
	}
	if err := env.Client.Create(context.Background(), cm); err != nil {
		t.Fatalf("creating ConfigMap: %v", err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), cm) })
	return cm.Name
}

// keylessSig is how the test makes one keyless signature, as `cosign sign`
// does without a key: a fresh key, a certificate for it from ca, the
// signature of the payload, and a hashedrekord entry in log with the log's
// signed entry timestamp.
type keylessSig struct {
	ca        *testCA
	log       testLog
	id        identity
	forDigest string        // the digest the payload names; default: the image's
	certStart time.Duration // the certificate's notBefore, from now; default -1m
	logAt     time.Duration // integratedTime, from now; default now
	noEntry   bool          // no dev.sigstore.cosign/bundle annotation
	otherData bool          // the signature (and its log entry) is over another payload than the layer's
}

// signKeyless pushes the keyless signature of sig for digest to repo's
// sha256-<hex>.sig tag.
func signKeyless(t *testing.T, r *testRegistry, repo, digest string, sig keylessSig) {
	t.Helper()
	forDigest := digest
	if sig.forDigest != "" {
		forDigest = sig.forDigest
	}
	payload := fmt.Sprintf(`{"critical":{"identity":{"docker-reference":%q},"image":{"docker-manifest-digest":%q},"type":"cosign container image signature"},"optional":null}`,
		r.host+"/"+repo, forDigest)
	signed := payload
	if sig.otherData {
		signed = strings.Replace(payload, "null", `{"tampered":true}`, 1)
	}
	key := newKeyPair(t)
	certStart := -time.Minute
	if sig.certStart != 0 {
		certStart = sig.certStart
	}
	now := time.Now()
	cert := sig.ca.leaf(t, key, sig.id, now.Add(certStart))
	signedHash := sha256.Sum256([]byte(signed))
	signature, err := ecdsa.SignASN1(rand.Reader, key, signedHash[:])
	if err != nil {
		t.Fatal(err)
	}
	// The log entry records what was signed (a log checks that the
	// signature verifies over the hash it records).
	hash := signedHash
	certPEM := pemOf(cert)
	ann := map[string]string{
		"dev.cosignproject.cosign/signature": base64.StdEncoding.EncodeToString(signature),
		"dev.sigstore.cosign/certificate":    certPEM,
		"dev.sigstore.cosign/chain":          pemOf(sig.ca.inter, sig.ca.root),
	}
	if !sig.noEntry {
		ann["dev.sigstore.cosign/bundle"] = logEntry(t, sig.log, now.Add(sig.logAt), hash[:], signature, certPEM)
	}
	layer := static.NewLayer([]byte(payload), types.MediaType("application/vnd.dev.cosign.simplesigning.v1+json"))
	img, err := mutate.Append(empty.Image, mutate.Addendum{Layer: layer, Annotations: ann})
	if err != nil {
		t.Fatal(err)
	}
	r.push(t, repo+":"+strings.Replace(digest, ":", "-", 1)+".sig", img)
}

// logEntry is the dev.sigstore.cosign/bundle annotation of a hashedrekord
// entry of hash, signature and certificate, recorded in log at at.
func logEntry(t *testing.T, log testLog, at time.Time, hash, signature []byte, certPEM string) string {
	t.Helper()
	body, err := json.Marshal(map[string]any{
		"apiVersion": "0.0.1",
		"kind":       "hashedrekord",
		"spec": map[string]any{
			"data": map[string]any{"hash": map[string]any{"algorithm": "sha256", "value": hex.EncodeToString(hash)}},
			"signature": map[string]any{
				"content":   base64.StdEncoding.EncodeToString(signature),
				"publicKey": map[string]any{"content": base64.StdEncoding.EncodeToString([]byte(certPEM))},
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The log signs the canonical JSON (sorted keys, no spaces: what
	// encoding/json writes for a map of these values) of the entry's
	// payload.
	entry := map[string]any{
		"body":           base64.StdEncoding.EncodeToString(body),
		"integratedTime": at.Unix(),
		"logIndex":       int64(42),
		"logID":          hex.EncodeToString(log.id),
	}
	canonical, err := json.Marshal(entry)
	if err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256(canonical)
	set, err := ecdsa.SignASN1(rand.Reader, log.key, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]any{"SignedEntryTimestamp": set, "Payload": entry})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestKeylessVerification: an image source with verify.cosign.keyless
// unpacks only an image with a keyless signature for its digest whose
// certificate chains to the trusted root's certificate authority, names
// the issuer and subject, and was logged (signed entry timestamp of a log
// of the trusted root) while the certificate was valid; anything else is
// SignatureInvalid before a layer is read, naming the image and why. The
// trusted root ConfigMap is read as the key Secret is.
func TestKeylessVerification(t *testing.T) {
	r := newRegistry(t, regOpts{})
	fulcio, otherCA := newCA(t, "fulcio"), newCA(t, "other")
	rekor, otherLog := newLog(t), newLog(t)
	trust := createConfigMap(t, "trusted_root.json", trustedRoot(t, []*testCA{fulcio}, []testLog{rekor}))
	img := imageOf(t, layerOf(t, tarOf(t, entry{"manifests/cm.yaml", "kind: ConfigMap"})))
	otherImg := imageOf(t, layerOf(t, tarOf(t, entry{"manifests/other.yaml", "kind: ConfigMap"})))
	byEmail := identity{issuer: testIssuer, email: testEmail}
	good := keylessSig{ca: fulcio, log: rekor, id: byEmail}
	with := func(mutate func(*keylessSig)) keylessSig {
		s := good
		mutate(&s)
		return s
	}
	exact := v1alpha2.KeylessVerification{Issuer: testIssuer, Subject: testEmail}
	tests := []struct {
		name   string
		sig    *keylessSig // nil: unsigned
		key    bool        // signed with a key instead
		other  bool        // the signature names the other image's digest
		policy v1alpha2.KeylessVerification
		trust  func() string // the ConfigMap; default trust
		reason string
		msg    string
	}{
		{name: "valid", sig: &good, policy: exact},
		{name: "URI subject by regexp", sig: ptr.To(with(func(s *keylessSig) { s.id = identity{issuer: testIssuer, uri: testWorkflow} })),
			policy: v1alpha2.KeylessVerification{Issuer: testIssuer, SubjectRegExp: `https://git\.example\.test/team/app/\.github/workflows/[a-z]+\.yaml@refs/heads/main`}},
		{name: "legacy issuer extension", sig: ptr.To(with(func(s *keylessSig) { s.id.legacy = true })), policy: exact},
		{name: "unsigned", policy: exact, reason: v1alpha2.ReasonSignatureInvalid, msg: "is not signed: no cosign signature at"},
		{name: "certificate of another CA", sig: ptr.To(with(func(s *keylessSig) { s.ca = otherCA })), policy: exact,
			reason: v1alpha2.ReasonSignatureInvalid, msg: `does not chain to a certificate authority of the trusted root`},
		{name: "wrong issuer", sig: ptr.To(with(func(s *keylessSig) { s.id.issuer = "https://evil.test" })), policy: exact,
			reason: v1alpha2.ReasonSignatureInvalid, msg: `expected issuer value "https://issuer.test", got "https://evil.test"`},
		{name: "wrong subject", sig: ptr.To(with(func(s *keylessSig) { s.id.email = "mallory@example.test" })), policy: exact,
			reason: v1alpha2.ReasonSignatureInvalid, msg: `mallory@example.test`},
		{name: "regexp matches only part of the subject", sig: ptr.To(with(func(s *keylessSig) { s.id.email = "release@example.test.evil.test" })),
			policy: v1alpha2.KeylessVerification{Issuer: testIssuer, SubjectRegExp: `release@example\.test`},
			reason: v1alpha2.ReasonSignatureInvalid, msg: "release@example.test.evil.test"},
		{name: "signature for another digest", sig: &good, other: true, policy: exact,
			reason: v1alpha2.ReasonSignatureInvalid, msg: "signature 1 is for sha256:"},
		{name: "signature over another payload", sig: ptr.To(with(func(s *keylessSig) { s.otherData = true })), policy: exact,
			reason: v1alpha2.ReasonSignatureInvalid, msg: "does not match artifact"},
		{name: "signed with a key, not keyless", key: true, policy: exact,
			reason: v1alpha2.ReasonSignatureInvalid, msg: "signature 1 has no certificate (annotation dev.sigstore.cosign/certificate): not a keyless signature"},
		{name: "no transparency log entry", sig: ptr.To(with(func(s *keylessSig) { s.noEntry = true })), policy: exact,
			reason: v1alpha2.ReasonSignatureInvalid, msg: "signature 1 has no transparency log entry (annotation dev.sigstore.cosign/bundle)"},
		{name: "entry timestamp signed by another log", sig: ptr.To(with(func(s *keylessSig) { s.log = otherLog })), policy: exact,
			reason: v1alpha2.ReasonSignatureInvalid, msg: "not enough verified log entries"},
		{name: "logged after the certificate expired", sig: ptr.To(with(func(s *keylessSig) { s.certStart = -time.Hour })), policy: exact,
			reason: v1alpha2.ReasonSignatureInvalid, msg: "integrated time outside certificate validity"},
		{name: "logged before the certificate was valid", sig: ptr.To(with(func(s *keylessSig) { s.logAt = -10 * time.Minute })), policy: exact,
			reason: v1alpha2.ReasonSignatureInvalid, msg: "integrated time outside certificate validity"},
		{name: "trusted root ConfigMap missing", sig: &good, policy: exact, trust: func() string { return "no-such-root" },
			reason: v1alpha2.ReasonSourceNotFound, msg: "ConfigMap rukpak-system/no-such-root not found"},
		{name: "ConfigMap without trusted_root.json", sig: &good, policy: exact, trust: func() string { return createConfigMap(t, "other", "{}") },
			reason: v1alpha2.ReasonInvalidConfig, msg: "has no key trusted_root.json"},
		{name: "malformed trusted root", sig: &good, policy: exact, trust: func() string { return createConfigMap(t, "trusted_root.json", `{"mediaType": 3}`) },
			reason: v1alpha2.ReasonInvalidConfig, msg: "trusted_root.json is not a sigstore trusted root"},
		{name: "invalid subjectRegExp", sig: &good, policy: v1alpha2.KeylessVerification{Issuer: testIssuer, SubjectRegExp: "("},
			reason: v1alpha2.ReasonInvalidConfig, msg: "subjectRegExp"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := fmt.Sprintf("keyless%d/app", i)
			digest := r.push(t, repo+":v1", img)
			otherDigest := r.push(t, repo+":other", otherImg)
			if tt.sig != nil {
				sig := *tt.sig
				if tt.other {
					sig.forDigest = otherDigest
				}
				signKeyless(t, r, repo, digest, sig)
			}
			if tt.key {
				sign(t, r, repo, digest, digest, newKey(t))
			}
			policy := tt.policy
			policy.TrustedRootConfigMap = v1alpha2.LocalObjectReference{Name: trust}
			if tt.trust != nil {
				policy.TrustedRootConfigMap.Name = tt.trust()
			}
			src := v1alpha2.BundleSource{Type: v1alpha2.SourceTypeImage, Image: &v1alpha2.ImageSource{
				Ref: r.host + "/" + repo + "@" + digest, Verify: &v1alpha2.ImageVerification{Cosign: &v1alpha2.CosignVerification{Keyless: &policy}}}}
			dir := t.TempDir()
			err := testSource(nil).Unpack(context.Background(), src, dir)
			if tt.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(filepath.Join(dir, "manifests", "cm.yaml")); err != nil {
					t.Fatalf("the signed image was not unpacked: %v", err)
				}
				return
			}
			checkErr(t, "Unpack", err, tt.reason, tt.msg)
			if !strings.Contains(err.Error(), r.host+"/"+repo) && tt.reason == v1alpha2.ReasonSignatureInvalid {
				t.Fatalf("the error does not name the image: %v", err)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Fatalf("something was unpacked from a refused image: %v", entries)
			}
		})
	}
}

// TestClip: what is said about one signature is bounded, cut on a rune
// boundary.
func TestClip(t *testing.T) {
	for _, tt := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghijkl", 10, "abcdefg…"},
		{"ééééééé", 10, "ééé…"},
	} {
		if got := clip(tt.in, tt.n); got != tt.want || len(got) > tt.n {
			t.Errorf("clip(%q, %d) = %q, want %q (at most %d bytes)", tt.in, tt.n, got, tt.want, tt.n)
		}
	}
}
