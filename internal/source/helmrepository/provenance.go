package helmrepository

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"

	"helm.sh/helm/v4/pkg/provenance"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/source"
	"github.com/rukpak/rukpak/pkg/failure"
)

// Bounds of checking a provenance file.
const (
	// KeyringKey is the key of a keyring Secret holding the OpenPGP
	// public keys.
	KeyringKey = "keyring"
	// maxProvBytes bounds a provenance file (a few KiB in practice).
	maxProvBytes = 1 << 20
	// maxVerifiedArchiveBytes bounds a chart archive whose provenance is
	// checked: it is held in memory to be hashed as Helm's provenance
	// package hashes it.
	maxVerifiedArchiveBytes = 20 << 20
)

// verifyProvenance checks the provenance file of the pinned archive of h
// against the keyring h's verify.provenance names, as helm install
// --verify does: the file (the archive's URL with ".prov" appended) must
// be signed by a key of the keyring and name the sha256 of the archive
// under its file name, and the archive must be the pinned one. The
// archive is then downloaded again by Unpack, which refuses anything but
// the pinned sha256, so what is extracted is what was verified.
func (s *Source) verifyProvenance(ctx context.Context, h *v1alpha2.HelmRepositorySource) error {
	subject := fmt.Sprintf("chart %s %s of Helm repository %s", h.Chart, h.ResolvedVersion, source.RedactURL(h.URL))
	sig, err := s.signatory(ctx, &h.Verify.Provenance.KeyringSecret)
	if err != nil {
		return err
	}
	u, err := url.Parse(h.ResolvedURL)
	if err != nil {
		return failure.New(v1alpha2.ReasonUnpackFailed, "%s: resolvedURL is not a URL", subject)
	}
	provURL := *u
	provURL.Path += ".prov"
	prov, err := s.download(ctx, h, provURL.String(), maxProvBytes)
	if err != nil {
		return fmt.Errorf("%s: its provenance file: %w", subject, err)
	}
	archive, err := s.download(ctx, h, h.ResolvedURL, maxVerifiedArchiveBytes)
	if err != nil {
		return fmt.Errorf("%s: %w", subject, err)
	}
	sum := sha256.Sum256(archive)
	if got := hex.EncodeToString(sum[:]); got != h.SHA256 {
		return failure.New(v1alpha2.ReasonDigestMismatch, "%s: the archive's sha256 is %s, not the pinned %s", subject, got, h.SHA256)
	}
	if _, err := sig.Verify(archive, prov, path.Base(u.Path)); err != nil {
		return failure.New(v1alpha2.ReasonSignatureInvalid, "%s: the provenance file does not verify against the keyring of Secret %s: %v",
			subject, h.Verify.Provenance.KeyringSecret.Name, err)
	}
	return nil
}

// signatory reads the keyring of Secret ref (any format Helm reads).
func (s *Source) signatory(ctx context.Context, ref *v1alpha2.LocalObjectReference) (*provenance.Signatory, error) {
	sec, err := s.creds.Secret(ctx, ref)
	if err != nil {
		return nil, err
	}
	ring := sec.Data[KeyringKey]
	if len(ring) == 0 {
		return nil, failure.New(v1alpha2.ReasonInvalidConfig, "Secret %s has no key %s", ref.Name, KeyringKey)
	}
	// Helm reads keyrings from files only.
	dir, err := s.cache.workDir()
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(dir, "keyring-")
	if err != nil {
		return nil, fmt.Errorf("writing the keyring of Secret %s: %w", ref.Name, err)
	}
	defer func() { _ = os.Remove(f.Name()) }()
	_, err = f.Write(ring)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("writing the keyring of Secret %s: %w", ref.Name, err)
	}
	sig, err := provenance.NewFromKeyring(f.Name(), "")
	if err != nil {
		return nil, failure.New(v1alpha2.ReasonInvalidConfig, "Secret %s: key %s is not an OpenPGP keyring: %v", ref.Name, KeyringKey, err)
	}
	return sig, nil
}

// download downloads u with h's TLS settings (and credentials on h's host),
// at most maxBytes of it.
func (s *Source) download(ctx context.Context, h *v1alpha2.HelmRepositorySource, u string, maxBytes int64) ([]byte, error) {
	resp, done, err := s.http.Get(ctx, s.archive(h, u, ""), nil)
	if err != nil {
		return nil, err
	}
	defer done()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", source.RedactURL(u), err)
	}
	if int64(len(b)) > maxBytes {
		return nil, failure.New(v1alpha2.ReasonResourceLimit, "%s is larger than the limit of %d bytes", source.RedactURL(u), maxBytes)
	}
	return b, nil
}
