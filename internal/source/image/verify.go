package image

import (
	"bytes"
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// The classic cosign signature layout: an image at the tag
// sha256-<hex>.sig of the signed image's repository, one layer per
// signature, each a "simple signing" payload with the base64 signature in
// an annotation.
const (
	// cosignKey is the key of the public key in the Secret.
	cosignKey = "cosign.pub"
	// signatureAnnotation holds a layer's signature.
	signatureAnnotation = "dev.cosignproject.cosign/signature"
	// payloadType is the payload's critical.type.
	payloadType = "cosign container image signature"
	// maxPayload bounds one signature payload.
	maxPayload = 64 << 10
	// maxSignatures bounds the signatures read.
	maxSignatures = 16
	// maxProblem bounds what is said about one signature: it quotes what
	// the signature layer holds (digests, certificate names), and all of
	// them must fit a condition's message.
	maxProblem = 512
)

// payload is the part of a simple signing payload that is checked.
type payload struct {
	Critical struct {
		Type  string `json:"type"`
		Image struct {
			Digest string `json:"docker-manifest-digest"`
		} `json:"image"`
	} `json:"critical"`
}

// check verifies one signature: sig, the decoded signature annotation,
// over body, the layer's payload; ann are the layer's annotations. It
// returns what is wrong with it, or "" when it verifies.
type check func(ann map[string]string, sig, body []byte) string

// verifyCosign checks that digest, the image c reaches, has a cosign
// signature that verifies as v requires (with the public key of a Secret,
// or keyless against a trusted root) and whose payload names digest. Any
// other outcome is a SignatureInvalid failure naming the image and what
// was wrong; a missing Secret or ConfigMap is SourceNotFound, one without
// a usable key or trusted root InvalidConfig.
func (s *Source) verifyCosign(ctx context.Context, c *conn, v *v1alpha2.CosignVerification, digest string) error {
	var verify check
	var err error
	switch {
	case v.PublicKeySecret != nil && v.Keyless == nil:
		verify, err = s.keyCheck(ctx, v.PublicKeySecret)
	case v.Keyless != nil && v.PublicKeySecret == nil:
		verify, err = s.keylessCheck(ctx, v.Keyless)
	default:
		err = failure.New(v1alpha2.ReasonInvalidConfig, "verify.cosign must set exactly one of publicKeySecret and keyless")
	}
	if err != nil {
		return err
	}
	tag := c.repo.Tag(strings.Replace(digest, ":", "-", 1) + ".sig")
	sigs, err := remote.Image(tag, c.opts...)
	if err != nil {
		var te *transport.Error
		if errors.As(err, &te) && te.StatusCode == http.StatusNotFound {
			return failure.New(v1alpha2.ReasonSignatureInvalid, "%s is not signed: no cosign signature at %s", c.subject, tag)
		}
		return c.classify(err, "fetching the signatures of")
	}
	manifest, err := sigs.Manifest()
	if err != nil {
		return c.classify(err, "reading the signatures of")
	}
	var problems []string
	for i, layer := range manifest.Layers {
		if i == maxSignatures {
			problems = append(problems, fmt.Sprintf("only the first %d signatures were read", maxSignatures))
			break
		}
		sig, err := base64.StdEncoding.DecodeString(layer.Annotations[signatureAnnotation])
		if err != nil || len(sig) == 0 {
			problems = append(problems, fmt.Sprintf("signature %d has no %s", i+1, signatureAnnotation))
			continue
		}
		if layer.Size > maxPayload {
			problems = append(problems, fmt.Sprintf("signature %d: payload of %d bytes, over %d", i+1, layer.Size, maxPayload))
			continue
		}
		l, err := sigs.LayerByDigest(layer.Digest)
		if err != nil {
			return c.classify(err, "reading the signatures of")
		}
		rc, err := l.Compressed()
		if err != nil {
			return c.classify(err, "reading the signatures of")
		}
		body, err := io.ReadAll(io.LimitReader(rc, maxPayload+1))
		_ = rc.Close()
		if err != nil {
			return c.classify(err, "reading the signatures of")
		}
		if problem := verify(layer.Annotations, sig, body); problem != "" {
			problems = append(problems, fmt.Sprintf("signature %d %s", i+1, problem))
			continue
		}
		p := payload{}
		if err := json.Unmarshal(body, &p); err != nil || p.Critical.Type != payloadType {
			problems = append(problems, fmt.Sprintf("signature %d: not a cosign image signature payload", i+1))
			continue
		}
		if p.Critical.Image.Digest != digest {
			problems = append(problems, fmt.Sprintf("signature %d is for %s, not %s", i+1, p.Critical.Image.Digest, digest))
			continue
		}
		return nil
	}
	if len(problems) == 0 {
		problems = append(problems, "no signatures")
	}
	for i, p := range problems {
		problems[i] = clip(p, maxProblem)
	}
	return failure.New(v1alpha2.ReasonSignatureInvalid, "%s: no valid cosign signature at %s: %s", c.subject, tag, strings.Join(problems, "; "))
}

// keyCheck returns the check of signatures made with the public key of
// the Secret ref names.
func (s *Source) keyCheck(ctx context.Context, ref *v1alpha2.LocalObjectReference) (check, error) {
	sec, err := s.creds.Secret(ctx, ref)
	if err != nil {
		return nil, err
	}
	keyName := s.creds.Namespace() + "/" + ref.Name
	pem, ok := sec.Data[cosignKey]
	if !ok {
		return nil, failure.New(v1alpha2.ReasonInvalidConfig, "Secret %s has no key %s (the cosign public key, PEM)", keyName, cosignKey)
	}
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pem)
	if err != nil {
		return nil, failure.New(v1alpha2.ReasonInvalidConfig, "Secret %s: %s is not a PEM public key: %v", keyName, cosignKey, err)
	}
	verifier, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return nil, failure.New(v1alpha2.ReasonInvalidConfig, "Secret %s: %s: %v", keyName, cosignKey, err)
	}
	return func(_ map[string]string, sig, body []byte) string {
		if err := verifier.VerifySignature(bytes.NewReader(sig), bytes.NewReader(body)); err != nil {
			return "does not verify with the key of Secret " + keyName
		}
		return ""
	}, nil
}

// clip shortens s to at most n bytes, on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
