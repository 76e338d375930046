package image

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// A keyless signature in the classic layout is a signature layer whose
// annotations also hold the signing certificate and the transparency log
// entry (cosign's "bundle": the entry's body, time, index and log, and the
// log's signed entry timestamp over them). The certificate chain cosign
// stores next to them is not used: the intermediates come from the trusted
// root, as they do for sigstore-go's own bundles.
const (
	// trustedRootKey is the key of the trusted root in the ConfigMap.
	trustedRootKey = "trusted_root.json"
	// certificateAnnotation holds a layer's PEM signing certificate.
	certificateAnnotation = "dev.sigstore.cosign/certificate"
	// bundleAnnotation holds a layer's transparency log entry.
	bundleAnnotation = "dev.sigstore.cosign/bundle"
	// bundleMediaType is the sigstore bundle version a classic keyless
	// signature is read as: 0.1, whose log entries carry a signed entry
	// timestamp (an inclusion promise) rather than an inclusion proof.
	bundleMediaType = "application/vnd.dev.sigstore.bundle+json;version=0.1"
)

// rekorBundle is the transparency log entry of a keyless signature layer.
type rekorBundle struct {
	SignedEntryTimestamp []byte `json:"SignedEntryTimestamp"`
	Payload              struct {
		Body           string `json:"body"`
		IntegratedTime int64  `json:"integratedTime"`
		LogIndex       int64  `json:"logIndex"`
		LogID          string `json:"logID"`
	} `json:"Payload"`
}

// keylessCheck returns the check of keyless signatures: a certificate
// issued by a certificate authority of the trusted root of the ConfigMap v
// names, to v's issuer and subject, whose key made the signature, and an
// entry of a transparency log of that trusted root, signed by the log,
// recording the signature while the certificate was valid. sigstore-go
// verifies all of it.
func (s *Source) keylessCheck(ctx context.Context, v *v1alpha2.KeylessVerification) (check, error) {
	cm, err := s.creds.ConfigMap(ctx, &v.TrustedRootConfigMap)
	if err != nil {
		return nil, err
	}
	cmName := s.creds.Namespace() + "/" + v.TrustedRootConfigMap.Name
	data, ok := cm.Data[trustedRootKey]
	if !ok {
		bin, ok := cm.BinaryData[trustedRootKey]
		if !ok {
			return nil, failure.New(v1alpha2.ReasonInvalidConfig, "ConfigMap %s has no key %s (a sigstore trusted root)", cmName, trustedRootKey)
		}
		data = string(bin)
	}
	trusted, err := root.NewTrustedRootFromJSON([]byte(data))
	if err != nil {
		return nil, failure.New(v1alpha2.ReasonInvalidConfig, "ConfigMap %s: %s is not a sigstore trusted root: %v", cmName, trustedRootKey, err)
	}
	if len(trusted.FulcioCertificateAuthorities()) == 0 || len(trusted.RekorLogs()) == 0 {
		return nil, failure.New(v1alpha2.ReasonInvalidConfig, "ConfigMap %s: the trusted root of %s needs at least one certificate authority and one transparency log (it has %d and %d)",
			cmName, trustedRootKey, len(trusted.FulcioCertificateAuthorities()), len(trusted.RekorLogs()))
	}
	identity, err := certificateIdentity(v)
	if err != nil {
		return nil, err
	}
	// A signature counts with one entry of a log of the trusted root
	// whose signed entry timestamp verifies; its integrated time is the
	// time the certificate must have been valid at.
	verifier, err := verify.NewVerifier(trusted, verify.WithTransparencyLog(1), verify.WithIntegratedTimestamps(1))
	if err != nil {
		return nil, failure.New(v1alpha2.ReasonInvalidConfig, "ConfigMap %s: %v", cmName, err)
	}
	return func(ann map[string]string, sig, body []byte) string {
		entity, problem := keylessEntity(ann, sig, body)
		if problem != "" {
			return problem
		}
		policy := verify.NewPolicy(verify.WithArtifact(bytes.NewReader(body)), verify.WithCertificateIdentity(identity))
		if _, err := verifier.Verify(entity, policy); err != nil {
			return "does not verify against the trusted root of ConfigMap " + cmName + ": " + explain(err, ann)
		}
		return ""
	}, nil
}

// certificateIdentity is the issuer and subject v requires: the subject
// exactly, or a whole match of subjectRegExp.
func certificateIdentity(v *v1alpha2.KeylessVerification) (verify.CertificateIdentity, error) {
	subject, subjectRE := v.Subject, ""
	switch {
	case v.Issuer == "":
		return verify.CertificateIdentity{}, failure.New(v1alpha2.ReasonInvalidConfig, "verify.cosign.keyless sets no issuer")
	case (v.Subject == "") == (v.SubjectRegExp == ""):
		return verify.CertificateIdentity{}, failure.New(v1alpha2.ReasonInvalidConfig, "verify.cosign.keyless must set exactly one of subject and subjectRegExp")
	case v.SubjectRegExp != "":
		subjectRE = "^(?:" + v.SubjectRegExp + ")$"
		if _, err := regexp.Compile(subjectRE); err != nil {
			return verify.CertificateIdentity{}, failure.New(v1alpha2.ReasonInvalidConfig, "verify.cosign.keyless.subjectRegExp: %v", err)
		}
	}
	id, err := verify.NewShortCertificateIdentity(v.Issuer, "", subject, subjectRE)
	if err != nil {
		return verify.CertificateIdentity{}, failure.New(v1alpha2.ReasonInvalidConfig, "verify.cosign.keyless: %v", err)
	}
	return id, nil
}

// keylessEntity reads a classic keyless signature layer — sig over body,
// the certificate and log entry in ann — as a sigstore bundle of version
// 0.1, or says what it lacks.
func keylessEntity(ann map[string]string, sig, body []byte) (*bundle.Bundle, string) {
	certPEM, ok := ann[certificateAnnotation]
	if !ok {
		return nil, "has no certificate (annotation " + certificateAnnotation + "): not a keyless signature"
	}
	certs, err := cryptoutils.UnmarshalCertificatesFromPEM([]byte(certPEM))
	if err != nil || len(certs) == 0 {
		return nil, "has a certificate (annotation " + certificateAnnotation + ") that is not a PEM certificate"
	}
	rawBundle, ok := ann[bundleAnnotation]
	if !ok {
		return nil, "has no transparency log entry (annotation " + bundleAnnotation + ")"
	}
	rb := rekorBundle{}
	if err := json.Unmarshal([]byte(rawBundle), &rb); err != nil {
		return nil, "has a transparency log entry (annotation " + bundleAnnotation + ") that is not JSON: " + err.Error()
	}
	entryBody, err := base64.StdEncoding.DecodeString(rb.Payload.Body)
	if err != nil || len(entryBody) == 0 {
		return nil, "has a transparency log entry without a body"
	}
	logID, err := hex.DecodeString(rb.Payload.LogID)
	if err != nil || len(logID) == 0 {
		return nil, "has a transparency log entry without a log ID"
	}
	if len(rb.SignedEntryTimestamp) == 0 {
		return nil, "has a transparency log entry without a signed entry timestamp"
	}
	kind := struct {
		Kind       string `json:"kind"`
		APIVersion string `json:"apiVersion"`
	}{}
	if err := json.Unmarshal(entryBody, &kind); err != nil || kind.Kind == "" || kind.APIVersion == "" {
		return nil, "has a transparency log entry whose body is not a log entry"
	}
	digest := sha256.Sum256(body)
	pb := &protobundle.Bundle{
		MediaType: bundleMediaType,
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_X509CertificateChain{X509CertificateChain: &protocommon.X509CertificateChain{
				Certificates: []*protocommon.X509Certificate{{RawBytes: certs[0].Raw}},
			}},
			TlogEntries: []*protorekor.TransparencyLogEntry{{
				LogIndex:          rb.Payload.LogIndex,
				LogId:             &protocommon.LogId{KeyId: logID},
				KindVersion:       &protorekor.KindVersion{Kind: kind.Kind, Version: kind.APIVersion},
				IntegratedTime:    rb.Payload.IntegratedTime,
				InclusionPromise:  &protorekor.InclusionPromise{SignedEntryTimestamp: rb.SignedEntryTimestamp},
				CanonicalizedBody: entryBody,
			}},
		},
		Content: &protobundle.Bundle_MessageSignature{MessageSignature: &protocommon.MessageSignature{
			MessageDigest: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: digest[:]},
			Signature:     sig,
		}},
	}
	b, err := bundle.NewBundle(pb)
	if err != nil {
		return nil, "has a transparency log entry that cannot be read: " + err.Error()
	}
	return b, ""
}

// explain says why sigstore-go refused a keyless signature, adding what
// the layer itself shows about the most common causes.
func explain(err error, ann map[string]string) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "not enough verified log entries"):
		return msg + " (the entry's signed entry timestamp does not verify with a key of a transparency log of the trusted root, or its log is not in it)"
	case strings.Contains(msg, "leaf certificate verification failed"):
		certs, cerr := cryptoutils.UnmarshalCertificatesFromPEM([]byte(ann[certificateAnnotation]))
		rb := rekorBundle{}
		if cerr != nil || len(certs) == 0 || json.Unmarshal([]byte(ann[bundleAnnotation]), &rb) != nil {
			return msg
		}
		c := certs[0]
		return fmt.Sprintf("%s: the certificate (issued by %q) does not chain to a certificate authority of the trusted root valid at %s, when the transparency log recorded the signature",
			msg, c.Issuer.String(), time.Unix(rb.Payload.IntegratedTime, 0).UTC().Format(time.RFC3339))
	}
	return msg
}
