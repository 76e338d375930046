//go:build integration

package image

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	corev1 "k8s.io/api/core/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// cosignKey is a key pair the test makes, as `cosign generate-key-pair`
// would, with the Secret holding its public key.
type testKey struct {
	signer signature.Signer
	secret string
}

func newKey(t *testing.T) testKey {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := signature.LoadECDSASignerVerifier(priv, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := cryptoutils.MarshalPublicKeyToPEM(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	return testKey{signer: signer, secret: createSecret(t, corev1.SecretTypeOpaque, "cosign.pub", string(pem))}
}

// sign pushes cosign signatures of digest to repo's sha256-<hex>.sig tag,
// one layer each, as `cosign sign --key` does: each signed by keys[i], for
// the image digest named in its payload (forDigest).
func sign(t *testing.T, r *testRegistry, repo, digest, forDigest string, keys ...testKey) {
	t.Helper()
	img := empty.Image
	for _, k := range keys {
		payload := fmt.Sprintf(`{"critical":{"identity":{"docker-reference":%q},"image":{"docker-manifest-digest":%q},"type":"cosign container image signature"},"optional":null}`,
			r.host+"/"+repo, forDigest)
		sig, err := k.signer.SignMessage(strings.NewReader(payload))
		if err != nil {
			t.Fatal(err)
		}
		layer := static.NewLayer([]byte(payload), types.MediaType("application/vnd.dev.cosign.simplesigning.v1+json"))
		if img, err = mutate.Append(img, mutate.Addendum{Layer: layer, Annotations: map[string]string{
			"dev.cosignproject.cosign/signature": base64.StdEncoding.EncodeToString(sig),
		}}); err != nil {
			t.Fatal(err)
		}
	}
	r.push(t, repo+":"+strings.Replace(digest, ":", "-", 1)+".sig", img)
}

// TestCosignVerification: an image source with verify.cosign unpacks only
// an image signed with the Secret's key for its digest; anything else is
// SignatureInvalid before a layer is read, naming the image and why.
func TestCosignVerification(t *testing.T) {
	r := newRegistry(t, regOpts{})
	good, other := newKey(t), newKey(t)
	img := imageOf(t, layerOf(t, tarOf(t, entry{"manifests/cm.yaml", "kind: ConfigMap"})))
	otherImg := imageOf(t, layerOf(t, tarOf(t, entry{"manifests/other.yaml", "kind: ConfigMap"})))
	tests := []struct {
		name   string
		setup  func(repo, digest, otherDigest string)
		key    func() string
		reason string
		msg    string
	}{
		{name: "signed with the key", setup: func(repo, d, _ string) { sign(t, r, repo, d, d, good) }},
		{name: "one of several signatures", setup: func(repo, d, _ string) { sign(t, r, repo, d, d, other, good) }},
		{name: "unsigned", setup: func(string, string, string) {}, reason: v1alpha2.ReasonSignatureInvalid, msg: "is not signed: no cosign signature at"},
		{name: "signed with another key", setup: func(repo, d, _ string) { sign(t, r, repo, d, d, other) },
			reason: v1alpha2.ReasonSignatureInvalid, msg: "signature 1 does not verify with the key of Secret rukpak-system/"},
		{name: "signature for another digest", setup: func(repo, d, o string) { sign(t, r, repo, d, o, good) },
			reason: v1alpha2.ReasonSignatureInvalid, msg: "signature 1 is for sha256:"},
		{name: "key Secret missing", setup: func(repo, d, _ string) { sign(t, r, repo, d, d, good) },
			key: func() string { return "no-such-key" }, reason: v1alpha2.ReasonSourceNotFound, msg: "Secret rukpak-system/no-such-key not found"},
		{name: "Secret without a key", setup: func(repo, d, _ string) { sign(t, r, repo, d, d, good) },
			key: func() string { return createSecret(t, corev1.SecretTypeOpaque, "other", "x") }, reason: v1alpha2.ReasonInvalidConfig, msg: "has no key cosign.pub"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := fmt.Sprintf("signed%d/app", i)
			digest := r.push(t, repo+":v1", img)
			otherDigest := r.push(t, repo+":other", otherImg)
			tt.setup(repo, digest, otherDigest)
			key := good.secret
			if tt.key != nil {
				key = tt.key()
			}
			src := v1alpha2.BundleSource{Type: v1alpha2.SourceTypeImage, Image: &v1alpha2.ImageSource{
				Ref: r.host + "/" + repo + "@" + digest, Verify: &v1alpha2.ImageVerification{Cosign: &v1alpha2.CosignVerification{PublicKeySecret: &v1alpha2.LocalObjectReference{Name: key}}}}}
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
