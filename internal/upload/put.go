package upload

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rukpak/rukpak/pkg/failure"
)

// Put stores the archive read from r, whose digest must be digest, and
// records uploader (the user the content server authenticated) as one of
// its uploaders (Uploaders).
//
// When uploader stored the upload already (its manifest and every chunk
// exist and record them), Put marks them as used, restarting their grace
// period, and reads nothing from r. Anyone else must send the bytes: the
// digest alone, which anyone who can read a BundleDeployment knows, makes
// no one an uploader. Put then splits r into chunks of ChunkSize, writes
// them (concurrently; a chunk that exists already is reused), checks the
// archive's digest and only then writes the manifest, or adds uploader to
// the stored one, so that a manifest only exists when the upload is
// complete. An archive that does not match digest, or is larger than the
// maximum size, leaves no manifest behind and records no one; GC removes
// its chunks.
func (s *Store) Put(ctx context.Context, r io.Reader, digest, uploader string) error {
	hexDigest, err := ParseDigest(digest)
	if err != nil {
		return err
	}
	if uploader == "" {
		return fmt.Errorf("uploading %s: no uploader to record", digest)
	}
	if stored, err := s.reuse(ctx, digest, uploader); err != nil || stored {
		return err
	}
	start := s.now()
	m, err := s.putChunks(ctx, r, digest)
	if err != nil {
		return fmt.Errorf("uploading %s: %w", digest, err)
	}
	if s.now().Sub(start) > s.grace/2 {
		// A GC may delete chunks written longer than the grace period ago
		// that no manifest lists yet: refresh them first.
		if err := s.touchChunks(ctx, m); err != nil {
			return fmt.Errorf("uploading %s: the upload was slower than the garbage collector's grace period (%s) allows: %w", digest, s.grace, err)
		}
	}
	if err := s.createOrTouch(ctx, m.configMap(s.namespace, hexDigest, uploader)); err != nil {
		return fmt.Errorf("uploading %s: writing manifest: %w", digest, err)
	}
	return nil
}

// reuse reports whether uploader stored the upload digest completely
// already, marking its manifest and then its chunks as used if so. A
// stored upload that records MaxUploaders others is an *UploadersError.
func (s *Store) reuse(ctx context.Context, digest, uploader string) (bool, error) {
	m, err := s.manifest(ctx, digest)
	if failure.As(err) != nil {
		return false, nil //nolint:nilerr // missing or unreadable: upload it again
	}
	if err != nil {
		return false, err
	}
	if !slices.Contains(m.uploaders, uploader) {
		if len(m.uploaders) >= MaxUploaders {
			return false, &UploadersError{Digest: digest}
		}
		return false, nil // a new uploader sends the bytes
	}
	hexDigest, _ := ParseDigest(digest)
	err = s.touch(ctx, ManifestName(hexDigest), nil)
	if err == nil {
		err = s.touchChunks(ctx, m)
	}
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// touchChunks marks every chunk of m as used.
func (s *Store) touchChunks(ctx context.Context, m *manifest) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.concurrency)
	for _, c := range m.chunks {
		g.Go(func() error { return s.touch(gctx, ChunkName(c.hex), nil) })
	}
	return g.Wait()
}

// putChunks reads r to its end, writing its chunks, and returns the
// manifest that lists them.
func (s *Store) putChunks(ctx context.Context, r io.Reader, digest string) (*manifest, error) {
	m := &manifest{digest: digest}
	whole := sha256.New()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.concurrency)
	var readErr error
	for gctx.Err() == nil {
		buf := make([]byte, ChunkSize)
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			if m.size+int64(n) > s.maxSize {
				readErr = &SizeError{Limit: s.maxSize}
				break
			}
			buf = buf[:n]
			whole.Write(buf)
			sum := sha256.Sum256(buf)
			c := chunkRef{hex: hex.EncodeToString(sum[:]), size: int64(n)}
			m.chunks, m.size = append(m.chunks, c), m.size+c.size
			g.Go(func() error { return s.createOrTouch(gctx, s.chunk(c.hex, buf)) })
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			readErr = fmt.Errorf("reading the archive: %w", err)
			break
		}
	}
	if err := errors.Join(readErr, g.Wait()); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if got := digestPrefix + hex.EncodeToString(whole.Sum(nil)); got != digest {
		return nil, &DigestError{Got: got, Want: digest}
	}
	return m, nil
}

// chunk returns the immutable ConfigMap of a chunk.
func (s *Store) chunk(hexSum string, data []byte) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:      ChunkName(hexSum),
			Namespace: s.namespace,
			Labels:    map[string]string{LabelChunk: "true"},
		},
		Immutable:  ptr.To(true),
		BinaryData: map[string][]byte{chunkKey: data},
	}
}

// createOrTouch creates cm or, if it exists (content-addressed objects with
// the same name have the same content), marks it as used and adds cm's
// annotations (its uploader) to it. An object deleted between the two (by
// a GC) is created again.
func (s *Store) createOrTouch(ctx context.Context, cm *corev1.ConfigMap) error {
	for attempt := 0; ; attempt++ {
		cm.ResourceVersion = ""
		err := s.client.Create(ctx, cm)
		if !apierrors.IsAlreadyExists(err) {
			if err != nil {
				return fmt.Errorf("creating ConfigMap %s/%s: %w", s.namespace, cm.Name, err)
			}
			return nil
		}
		err = s.touch(ctx, cm.Name, cm.Annotations)
		if !apierrors.IsNotFound(err) || attempt == 2 {
			return err
		}
	}
}

// SizeError is the error of Put for an archive larger than the Store's
// maximum size.
type SizeError struct {
	// Limit is the maximum size in bytes.
	Limit int64
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("the archive is larger than the limit of %d bytes", e.Limit)
}

// DigestError is the error of Put for an archive whose digest is not the
// one it was uploaded as.
type DigestError struct {
	// Got is the archive's digest, Want the one it was uploaded as.
	Got, Want string
}

func (e *DigestError) Error() string {
	return fmt.Sprintf("the archive has digest %s, not %s", e.Got, e.Want)
}
