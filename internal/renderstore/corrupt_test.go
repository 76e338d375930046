//go:build integration

package renderstore

import (
	"compress/gzip"
	"context"
	"errors"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// TestCorruptRenders breaks a stored render of several chunks in one way
// each: Load reports a *CorruptError naming the chunk and the problem, and
// a Save of the render again replaces it.
func TestCorruptRenders(t *testing.T) {
	const chunkSize = 2 << 10
	tests := []struct {
		name      string
		break_    func(t *testing.T, s *Store, ns string, b *v1alpha2.Bundle, n int)
		opts      Options
		wantChunk int
		want      Problem
	}{
		{name: "a chunk deleted", wantChunk: 2, want: ProblemMissing,
			break_: func(t *testing.T, s *Store, ns string, b *v1alpha2.Bundle, n int) {
				sec := chunkSecrets(t, ns, b)[2]
				if err := env.Client.Delete(context.Background(), &sec); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "chunk 0 deleted", wantChunk: 0, want: ProblemMissing,
			break_: func(t *testing.T, s *Store, ns string, b *v1alpha2.Bundle, n int) {
				sec := chunkSecrets(t, ns, b)[0]
				if err := env.Client.Delete(context.Background(), &sec); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "the last chunk deleted", wantChunk: -2, want: ProblemMissing, // -2: the last
			break_: func(t *testing.T, s *Store, ns string, b *v1alpha2.Bundle, n int) {
				sec := chunkSecrets(t, ns, b)[n-1]
				if err := env.Client.Delete(context.Background(), &sec); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "a chunk's bytes changed", wantChunk: 1, want: ProblemMismatch,
			break_: func(t *testing.T, s *Store, ns string, b *v1alpha2.Bundle, n int) {
				replaceChunk(t, ns, b, 1, func(sec *corev1.Secret) { sec.Data[dataKey][10] ^= 0xff })
			}},
		{name: "a chunk's bytes and checksum changed", wantChunk: -1, want: ProblemMismatch,
			break_: func(t *testing.T, s *Store, ns string, b *v1alpha2.Bundle, n int) {
				replaceChunk(t, ns, b, 1, func(sec *corev1.Secret) {
					sec.Data[dataKey][10] ^= 0xff
					sec.Annotations[annotationChunkSHA256] = sha256Hex(sec.Data[dataKey])
				})
			}},
		{name: "a chunk shortened", wantChunk: 1, want: ProblemMismatch,
			break_: func(t *testing.T, s *Store, ns string, b *v1alpha2.Bundle, n int) {
				replaceChunk(t, ns, b, 1, func(sec *corev1.Secret) { sec.Data[dataKey] = sec.Data[dataKey][:100] })
			}},
		{name: "the payload checksum changed everywhere", wantChunk: -1, want: ProblemMismatch,
			break_: func(t *testing.T, s *Store, ns string, b *v1alpha2.Bundle, n int) {
				for i := range n {
					annotateChunk(t, ns, b, i, map[string]string{annotationSHA256: sha256Hex([]byte("forged"))})
				}
			}},
		{name: "the payload checksum changed on chunk 0", wantChunk: 1, want: ProblemMismatch,
			break_: func(t *testing.T, s *Store, ns string, b *v1alpha2.Bundle, n int) {
				annotateChunk(t, ns, b, 0, map[string]string{annotationSHA256: sha256Hex([]byte("forged"))})
			}},
		{name: "fewer chunks announced", wantChunk: 1, want: ProblemMismatch,
			break_: func(t *testing.T, s *Store, ns string, b *v1alpha2.Bundle, n int) {
				annotateChunk(t, ns, b, 0, map[string]string{annotationChunks: strconv.Itoa(n - 1)})
			}},
		{name: "a bad chunk count", wantChunk: 0, want: ProblemInvalid,
			break_: func(t *testing.T, s *Store, ns string, b *v1alpha2.Bundle, n int) {
				annotateChunk(t, ns, b, 0, map[string]string{annotationChunks: "many"})
			}},
		{name: "too many chunks announced", wantChunk: 0, want: ProblemTooLarge,
			break_: func(t *testing.T, s *Store, ns string, b *v1alpha2.Bundle, n int) {
				annotateChunk(t, ns, b, 0, map[string]string{annotationChunks: strconv.Itoa(DefaultMaxChunks + 1)})
			}},
		{name: "chunk 0 of another bundle", wantChunk: 0, want: ProblemMismatch,
			break_: func(t *testing.T, s *Store, ns string, b *v1alpha2.Bundle, n int) {
				annotateChunk(t, ns, b, 0, map[string]string{annotationBundle: "another"})
			}},
		{name: "a chunk of another save", wantChunk: 1, want: ProblemMismatch,
			break_: func(t *testing.T, s *Store, ns string, b *v1alpha2.Bundle, n int) {
				old := chunkSecrets(t, ns, b)[1]
				if err := s.Delete(context.Background(), b.Name); err != nil {
					t.Fatal(err)
				}
				if err := s.Save(context.Background(), b, Render{Objects: randomObjects(t, 6, 1<<10)}); err != nil {
					t.Fatal(err)
				}
				replaceChunk(t, ns, b, 1, func(sec *corev1.Secret) {
					sec.Data, sec.Annotations = old.Data, old.Annotations
				})
			}},
		{name: "a chunk of another type", wantChunk: 1, want: ProblemInvalid,
			break_: func(t *testing.T, s *Store, ns string, b *v1alpha2.Bundle, n int) {
				replaceChunk(t, ns, b, 1, func(sec *corev1.Secret) { sec.Type = corev1.SecretTypeOpaque })
			}},
		{name: "a chunk with another key", wantChunk: 1, want: ProblemInvalid,
			break_: func(t *testing.T, s *Store, ns string, b *v1alpha2.Bundle, n int) {
				replaceChunk(t, ns, b, 1, func(sec *corev1.Secret) { sec.Data["extra"] = []byte("x") })
			}},
		{name: "not gzip", wantChunk: -1, want: ProblemUndecodable,
			break_: func(t *testing.T, s *Store, ns string, b *v1alpha2.Bundle, n int) {
				writePayload(t, s, b, []byte("plain text, not a render"))
			}},
		{name: "an unknown encoding version", wantChunk: -1, want: ProblemUnsupported,
			break_: func(t *testing.T, s *Store, ns string, b *v1alpha2.Bundle, n int) {
				writePayload(t, s, b, gzipBytes(t, []byte(`{"version":99,"revision":"`+b.Name+`"}`), gzip.DefaultCompression))
			}},
		{name: "the render of another bundle", wantChunk: -1, want: ProblemMismatch,
			break_: func(t *testing.T, s *Store, ns string, b *v1alpha2.Bundle, n int) {
				enc, err := encode(&Render{Revision: "another", BundleUID: b.UID}, DefaultMaxSize)
				if err != nil {
					t.Fatal(err)
				}
				writePayload(t, s, b, enc.data)
			}},
		{name: "a decompression bomb", wantChunk: -1, want: ProblemTooLarge, opts: Options{MaxSize: 1 << 20},
			break_: func(t *testing.T, s *Store, ns string, b *v1alpha2.Bundle, n int) {
				writePayload(t, s, b, bomb(t, 64<<20)) // 64 MiB in a few chunks
			}},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := env.Namespace(t, "render")
			b := newBundle(t, "corrupt")
			s := newStore(t, ns, nil, chunkSize, tt.opts)
			in := Render{FormatVersion: "helm/v1", ReleaseRevision: 1, Objects: randomObjects(t, 8, 1<<10)}
			if err := s.Save(ctx, b, in); err != nil {
				t.Fatal(err)
			}
			n := len(chunkSecrets(t, ns, b))
			if n < 4 {
				t.Fatalf("%d chunks, want more than 3", n)
			}
			tt.break_(t, s, ns, b, n)

			_, err := newStore(t, ns, nil, chunkSize, tt.opts).Load(ctx, b.Name)
			var ce *CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrNotFound) {
				t.Fatalf("Load = %v, want a *CorruptError", err)
			}
			wantChunk := tt.wantChunk
			if wantChunk == -2 {
				wantChunk = n - 1
			}
			if ce.Problem != tt.want || ce.Chunk != wantChunk || ce.Revision != b.Name {
				t.Fatalf("Load = %v (problem %s, chunk %d), want problem %s, chunk %d", err, ce.Problem, ce.Chunk, tt.want, wantChunk)
			}
			if got := Reason(err); got != EventRenderCorrupt {
				t.Fatalf("Reason = %q, want %q", got, EventRenderCorrupt)
			}
			t.Log(err)

			// Rendered again and saved, the render replaces the corrupt
			// one, by the Store that saw it corrupt or by another.
			if err := s.Save(ctx, b, in); err != nil {
				t.Fatalf("saving over a corrupt render: %v", err)
			}
			got, err := newStore(t, ns, nil, chunkSize, tt.opts).Load(ctx, b.Name)
			if err != nil {
				t.Fatal(err)
			}
			assertSame(t, got, saved(in, b))
			if m := len(chunkSecrets(t, ns, b)); m != n {
				t.Fatalf("%d chunks after the replacement, want %d", m, n)
			}
		})
	}
}

// TestUnrelatedSecretsAreLeftAlone: Delete and a replacing Save touch only
// the chunks of their Bundle, even a Secret carrying its label.
func TestUnrelatedSecretsAreLeftAlone(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "render")
	b := newBundle(t, "alone")
	s := newStore(t, ns, nil, 0, Options{})
	stray := &corev1.Secret{}
	stray.Name, stray.Namespace = "not-a-chunk", ns
	stray.Labels = map[string]string{LabelRenderOf: labelValue(b.Name)}
	neighbour := &corev1.Secret{}
	neighbour.Name, neighbour.Namespace = chunkName(b.Name+"-1", 0), ns
	neighbour.Labels = map[string]string{LabelRenderOf: labelValue(b.Name)}
	for _, sec := range []*corev1.Secret{stray, neighbour} {
		if err := env.Client.Create(ctx, sec); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Save(ctx, b, sampleRender()); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, b.Name); err != nil {
		t.Fatal(err)
	}
	for _, sec := range []*corev1.Secret{stray, neighbour} {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(sec), &corev1.Secret{}); err != nil {
			t.Fatalf("Secret %s: %v", sec.Name, err)
		}
	}
}
