//go:build integration

package helmrepository

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"helm.sh/helm/v4/pkg/provenance"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// pgpKey is an OpenPGP key pair the test makes, as gpg --gen-key would.
type pgpKey struct{ entity *openpgp.Entity }

func newPGPKey(t *testing.T, name string) pgpKey {
	t.Helper()
	e, err := openpgp.NewEntity(name, "", name+"@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	return pgpKey{entity: e}
}

// armoredPublic is the key's public part, as gpg --export --armor writes
// it.
func (k pgpKey) armoredPublic(t *testing.T) string {
	t.Helper()
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.entity.Serialize(w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// sign returns the provenance file of archive named filename, as helm
// package --sign writes it.
func (k pgpKey) sign(t *testing.T, archive []byte, filename, version string) []byte {
	t.Helper()
	sig := &provenance.Signatory{Entity: k.entity}
	out, err := sig.ClearSign(archive, filename, []byte("apiVersion: v2\nname: greeter\nversion: "+version+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	return []byte(out)
}

// TestProvenance: with verify.provenance, a chart is unpacked only when
// its provenance file is signed by a key of the keyring and names the
// archive's sha256; nothing is extracted otherwise.
func TestProvenance(t *testing.T) {
	ctx := context.Background()
	trusted, other := newPGPKey(t, "charts"), newPGPKey(t, "mallory")
	keyring := typedSecret(t, "Opaque", map[string]string{KeyringKey: trusted.armoredPublic(t)})
	noKeyring := typedSecret(t, "Opaque", map[string]string{"other": "x"})
	badKeyring := typedSecret(t, "Opaque", map[string]string{KeyringKey: "not a keyring"})
	const path = "/charts/greeter-1.0.0.tgz"
	tests := []struct {
		name    string
		prov    func(archive []byte) []byte // nil: no provenance file
		keyring *v1alpha2.LocalObjectReference
		reason  string // "" means unpacked
		msg     string
	}{
		{name: "signed by a key of the keyring", keyring: keyring,
			prov: func(a []byte) []byte { return trusted.sign(t, a, "greeter-1.0.0.tgz", "1.0.0") }},
		{name: "signed by another key", keyring: keyring,
			prov:   func(a []byte) []byte { return other.sign(t, a, "greeter-1.0.0.tgz", "1.0.0") },
			reason: v1alpha2.ReasonSignatureInvalid, msg: "does not verify against the keyring"},
		{name: "signed for other content", keyring: keyring,
			prov:   func([]byte) []byte { return trusted.sign(t, chartArchive(t, "6.6.6"), "greeter-1.0.0.tgz", "1.0.0") },
			reason: v1alpha2.ReasonSignatureInvalid, msg: "sha256 sum does not match"},
		{name: "signed under another file name", keyring: keyring,
			prov:   func(a []byte) []byte { return trusted.sign(t, a, "greeter-9.9.9.tgz", "1.0.0") },
			reason: v1alpha2.ReasonSignatureInvalid, msg: `does not contain a SHA for a file named "greeter-1.0.0.tgz"`},
		{name: "not signed at all", keyring: keyring,
			prov:   func([]byte) []byte { return []byte("name: greeter\n") },
			reason: v1alpha2.ReasonSignatureInvalid, msg: "signature block not found"},
		{name: "no provenance file", keyring: keyring,
			reason: v1alpha2.ReasonSourceNotFound, msg: "greeter-1.0.0.tgz.prov: not found"},
		{name: "a Secret without a keyring", keyring: noKeyring,
			prov:   func(a []byte) []byte { return trusted.sign(t, a, "greeter-1.0.0.tgz", "1.0.0") },
			reason: v1alpha2.ReasonInvalidConfig, msg: "has no key keyring"},
		{name: "a keyring that does not parse", keyring: badKeyring,
			prov:   func(a []byte) []byte { return trusted.sign(t, a, "greeter-1.0.0.tgz", "1.0.0") },
			reason: v1alpha2.ReasonInvalidConfig, msg: "is not an OpenPGP keyring"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRepo(t)
			r.publish([]string{"1.0.0"}, nil, false)
			if tt.prov != nil {
				r.mu.Lock()
				r.archives[path+".prov"] = tt.prov(r.archives[path])
				r.mu.Unlock()
			}
			s := newSource(WithWorkDir(t.TempDir()))
			src := helmSource(r.srv.URL+"/charts", "1.x")
			src.HelmRepository.Verify = &v1alpha2.HelmRepositoryVerification{
				Provenance: &v1alpha2.ProvenanceVerification{KeyringSecret: *tt.keyring}}
			pinned, err := s.Resolve(ctx, src)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			err = s.Unpack(ctx, pinned, dir)
			if tt.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(filepath.Join(dir, "greeter", "Chart.yaml")); err != nil {
					t.Fatal(err)
				}
				return
			}
			f := failure.As(err)
			if f == nil || f.Reason != tt.reason || !strings.Contains(f.Message, tt.msg) {
				t.Fatalf("error = %v, want %s holding %q", err, tt.reason, tt.msg)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Fatalf("%d entries extracted from a chart that does not verify", len(entries))
			}
		})
	}
}
