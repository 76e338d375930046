package upload

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// Reader streams a stored upload, reading a few chunks ahead. Every chunk is
// checked against its digest as it arrives, and the whole archive against
// the upload's digest at its end: a mismatch is a terminal DigestMismatch
// failure, a missing chunk a terminal SourceNotFound failure, returned by
// Read in place of io.EOF or the data.
type Reader struct {
	m       *manifest
	ctx     context.Context // done when the caller's is or on Close
	cancel  context.CancelFunc
	fetched []chan fetched
	slots   chan struct{}

	next  int    // index of the next chunk to take
	cur   []byte // what is left of the current chunk
	whole hash.Hash
	err   error // sticky: io.EOF or a failure
}

// fetched is a chunk read ahead.
type fetched struct {
	data []byte
	err  error
}

var _ io.ReadCloser = (*Reader)(nil)

// Open starts reading the upload digest. A missing upload is a terminal
// SourceNotFound failure. Close the Reader when done.
func (s *Store) Open(ctx context.Context, digest string) (*Reader, error) {
	m, err := s.manifest(ctx, digest)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &Reader{m: m, ctx: ctx, cancel: cancel, whole: sha256.New(), slots: make(chan struct{}, prefetch)}
	r.fetched = make([]chan fetched, len(m.chunks))
	for i := range r.fetched {
		r.fetched[i] = make(chan fetched, 1)
	}
	go s.readAhead(ctx, r)
	return r, nil
}

// readAhead reads the chunks of r in order, at most prefetch of them ahead
// of the consumer.
func (s *Store) readAhead(ctx context.Context, r *Reader) {
	for i, c := range r.m.chunks {
		select {
		case r.slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		go func() {
			data, err := s.readChunk(ctx, r.m.digest, c)
			r.fetched[i] <- fetched{data: data, err: err}
		}()
	}
}

// readChunk reads chunk c of the upload digest and verifies it.
func (s *Store) readChunk(ctx context.Context, digest string, c chunkRef) ([]byte, error) {
	name := ChunkName(c.hex)
	cm := &corev1.ConfigMap{}
	err := s.reader.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: name}, cm)
	if apierrors.IsNotFound(err) {
		return nil, failure.New(v1alpha2.ReasonSourceNotFound,
			"chunk %s/%s of upload %s not found; run `rukpakctl run` again", s.namespace, name, digest)
	}
	if err != nil {
		return nil, fmt.Errorf("reading chunk %s/%s of upload %s: %w", s.namespace, name, digest, err)
	}
	data := cm.BinaryData[chunkKey]
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != c.hex || int64(len(data)) != c.size {
		return nil, failure.New(v1alpha2.ReasonDigestMismatch,
			"chunk %s/%s of upload %s has %d bytes with digest sha256:%s: it was replaced after it was uploaded",
			s.namespace, name, digest, len(data), got)
	}
	return data, nil
}

// Read reads the archive.
func (r *Reader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 && r.err == nil {
		r.err = r.advance()
	}
	if len(r.cur) == 0 {
		return 0, r.err
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

// advance takes the next chunk, or checks the whole archive after the last.
func (r *Reader) advance() error {
	if r.next == len(r.m.chunks) {
		if got := digestPrefix + hex.EncodeToString(r.whole.Sum(nil)); got != r.m.digest {
			return failure.New(v1alpha2.ReasonDigestMismatch,
				"upload %s: its chunks make up an archive with digest %s: the manifest was replaced", r.m.digest, got)
		}
		return io.EOF
	}
	var f fetched
	select {
	case f = <-r.fetched[r.next]:
	case <-r.ctx.Done():
		return fmt.Errorf("reading upload %s: %w", r.m.digest, r.ctx.Err())
	}
	<-r.slots
	r.next++
	if f.err != nil {
		return f.err
	}
	r.whole.Write(f.data)
	r.cur = f.data
	return nil
}

// Verify reads what the consumer left unread and returns the first failure
// of the verification, nil when the whole archive matched its digest.
// Consumers that may stop before the end (an archive reader ignoring
// trailing bytes) call it to be sure the content was complete.
func (r *Reader) Verify() error {
	_, err := io.Copy(io.Discard, r)
	return err
}

// Close stops reading ahead.
func (r *Reader) Close() error {
	r.cancel()
	return nil
}
