//go:build integration

package upload

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
	"github.com/rukpak/rukpak/pkg/failure"
)

var env *envtest.Env

func TestMain(m *testing.M) { envtest.Run(m, &env) }

// newStore returns a Store in a namespace of its own.
func newStore(t *testing.T, opts ...Option) *Store {
	t.Helper()
	return NewStore(env.Client, env.Client, env.Namespace(t, "upload"), opts...)
}

// random returns a reader of n incompressible bytes, the same for a seed.
func random(seed uint64, n int64) io.Reader {
	var key [32]byte
	key[0] = byte(seed)
	return io.LimitReader(rand.NewChaCha8(key), n)
}

func digestOf(t *testing.T, r io.Reader) string {
	t.Helper()
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		t.Fatal(err)
	}
	return digestPrefix + hex.EncodeToString(h.Sum(nil))
}

// testUploader is the uploader of the tests' uploads.
const testUploader = "system:serviceaccount:team-a:installer"

// put stores data as testUploader and returns its digest.
func put(t *testing.T, s *Store, data []byte) string {
	t.Helper()
	d := digestOf(t, bytes.NewReader(data))
	if err := s.Put(context.Background(), bytes.NewReader(data), d, testUploader); err != nil {
		t.Fatalf("Put: %v", err)
	}
	return d
}

// chunks returns the UID of every chunk in s's namespace by name.
func chunks(t *testing.T, s *Store) map[string]types.UID {
	t.Helper()
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	if err := env.Client.List(context.Background(), list, client.InNamespace(s.namespace), client.MatchingLabels{LabelChunk: "true"}); err != nil {
		t.Fatal(err)
	}
	out := map[string]types.UID{}
	for _, o := range list.Items {
		out[o.Name] = o.UID
	}
	return out
}

func equalUIDs(a, b map[string]types.UID) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// readAll reads the whole upload digest.
func readAll(s *Store, digest string) ([]byte, error) {
	r, err := s.Open(context.Background(), digest)
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }()
	return io.ReadAll(r)
}

func TestRoundTrip100MiB(t *testing.T) {
	if testing.Short() {
		t.Skip("uploads 100 MiB")
	}
	const size = 100 << 20
	ctx := context.Background()
	s := newStore(t)
	digest := digestOf(t, random(1, size))
	if err := s.Put(ctx, random(1, size), digest, testUploader); err != nil {
		t.Fatalf("Put: %v", err)
	}
	info, err := s.Stat(ctx, digest)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Info{Digest: digest, Size: size, Chunks: size / ChunkSize}); info != want {
		t.Fatalf("Stat = %+v, want %+v", info, want)
	}

	before := chunks(t, s)
	if len(before) != info.Chunks {
		t.Fatalf("%d chunk ConfigMaps, want %d", len(before), info.Chunks)
	}
	for name := range before {
		cm := &corev1.ConfigMap{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: name}, cm); err != nil {
			t.Fatal(err)
		}
		if n := cm.Size(); n >= 1<<20 {
			t.Fatalf("chunk %s is %d bytes encoded, want < 1 MiB", name, n)
		}
		if cm.Immutable == nil || !*cm.Immutable {
			t.Fatalf("chunk %s is not immutable", name)
		}
	}

	r, err := s.Open(ctx, digest)
	if err != nil {
		t.Fatal(err)
	}
	if got := digestOf(t, r); got != digest {
		t.Fatalf("read back digest %s, want %s", got, digest)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	// Identical content again by the same uploader: nothing is read and
	// no chunk is written.
	if err := s.Put(ctx, strings.NewReader("never read"), digest, testUploader); err != nil {
		t.Fatalf("second Put: %v", err)
	}
	if after := chunks(t, s); !equalUIDs(before, after) {
		t.Fatal("the second Put of identical content changed the chunks")
	}
}

func TestPutReusesChunks(t *testing.T) {
	s := newStore(t)
	data, _ := io.ReadAll(random(2, 3*ChunkSize+100))
	digest := put(t, s, data)
	before := chunks(t, s)
	if len(before) != 4 {
		t.Fatalf("%d chunks, want 4", len(before))
	}

	// Without the manifest Put uploads again, reusing every chunk.
	hexDigest, _ := ParseDigest(digest)
	deleteCM(t, s, ManifestName(hexDigest))
	put(t, s, data)
	if after := chunks(t, s); !equalUIDs(before, after) {
		t.Fatal("uploading identical content created chunks")
	}

	// A lost chunk is restored by uploading again.
	var lost string
	for name := range before {
		lost = name
		break
	}
	deleteCM(t, s, lost)
	if _, err := readAll(s, digest); failure.Reason(err, "") != v1alpha2.ReasonSourceNotFound || !strings.Contains(err.Error(), lost) {
		t.Fatalf("reading with a lost chunk: %v, want SourceNotFound naming %s", err, lost)
	}
	put(t, s, data)
	got, err := readAll(s, digest)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read after re-upload: %d bytes, %v", len(got), err)
	}

	// Content sharing its first chunk shares that ConfigMap.
	other := append(bytes.Clone(data[:ChunkSize]), "tail"...)
	put(t, s, other)
	if n := len(chunks(t, s)); n != 5 {
		t.Fatalf("%d chunks after sharing one, want 5", n)
	}
}

func TestPutRefuses(t *testing.T) {
	data := []byte("some archive")
	tests := []struct {
		name    string
		data    string
		digest  string
		maxSize int64
		want    string
	}{
		{name: "wrong digest", digest: "sha256:" + strings.Repeat("0", 64), want: "the archive has digest " + digestOf(t, bytes.NewReader(data))},
		{name: "malformed digest", digest: "sha256:ABC", want: `invalid upload digest "sha256:ABC"`},
		{name: "too large", maxSize: 5, want: "larger than the limit of 5 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := []Option{}
			if tt.maxSize > 0 {
				opts = append(opts, WithMaxSize(tt.maxSize))
			}
			s := newStore(t, opts...)
			digest := tt.digest
			if digest == "" {
				digest = digestOf(t, bytes.NewReader(data))
			}
			err := s.Put(context.Background(), bytes.NewReader(data), digest, testUploader)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Put error = %v, want one containing %q", err, tt.want)
			}
			if _, err := s.Stat(context.Background(), digest); err == nil {
				t.Fatal("a refused upload left a manifest")
			}
		})
	}
}

func TestOpenFailures(t *testing.T) {
	data, _ := io.ReadAll(random(3, 2*ChunkSize+7))
	tests := []struct {
		name   string
		damage func(t *testing.T, s *Store, digest string, m *manifest) string // returns a name the message must contain
		reason string
		msg    string
	}{
		{name: "missing manifest", reason: v1alpha2.ReasonSourceNotFound,
			damage: func(t *testing.T, s *Store, digest string, _ *manifest) string {
				hexDigest, _ := ParseDigest(digest)
				deleteCM(t, s, ManifestName(hexDigest))
				return "upload " + digest + " not found; run `rukpakctl run` again"
			}},
		{name: "missing chunk", reason: v1alpha2.ReasonSourceNotFound,
			damage: func(t *testing.T, s *Store, _ string, m *manifest) string {
				deleteCM(t, s, ChunkName(m.chunks[1].hex))
				return "chunk " + s.namespace + "/" + ChunkName(m.chunks[1].hex) + " of upload"
			}},
		{name: "corrupted chunk", reason: v1alpha2.ReasonDigestMismatch,
			damage: func(t *testing.T, s *Store, _ string, m *manifest) string {
				name := ChunkName(m.chunks[2].hex)
				deleteCM(t, s, name)
				createCM(t, s.chunk(m.chunks[2].hex, []byte("evil data")))
				return name + " of upload sha256:"
			}},
		{name: "replaced manifest", reason: v1alpha2.ReasonDigestMismatch,
			damage: func(t *testing.T, s *Store, digest string, m *manifest) string {
				hexDigest, _ := ParseDigest(digest)
				deleteCM(t, s, ManifestName(hexDigest))
				m.chunks[0], m.chunks[1] = m.chunks[1], m.chunks[0]
				createCM(t, m.configMap(s.namespace, hexDigest, testUploader))
				return "the manifest was replaced"
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t)
			digest := put(t, s, data)
			m, err := s.manifest(context.Background(), digest)
			if err != nil {
				t.Fatal(err)
			}
			msg := tt.damage(t, s, digest, m)
			r, err := s.Open(context.Background(), digest)
			if err == nil {
				defer func() { _ = r.Close() }()
				err = r.Verify()
			}
			if failure.Reason(err, "") != tt.reason || !strings.Contains(err.Error(), msg) {
				t.Fatalf("error = %v, want a %s failure containing %q", err, tt.reason, msg)
			}
		})
	}
}

func deleteCM(t *testing.T, s *Store, name string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: name}}
	if err := env.Client.Delete(context.Background(), cm); err != nil {
		t.Fatalf("deleting %s: %v", name, err)
	}
}

func createCM(t *testing.T, cm *corev1.ConfigMap) {
	t.Helper()
	cm.Immutable = ptr.To(true)
	if err := env.Client.Create(context.Background(), cm); err != nil {
		t.Fatalf("creating %s: %v", cm.Name, err)
	}
}

func TestOpenStopsWhenCancelled(t *testing.T) {
	s := newStore(t)
	data, _ := io.ReadAll(random(4, 6*ChunkSize))
	digest := put(t, s, data)
	ctx, cancel := context.WithCancel(context.Background())
	r, err := s.Open(ctx, digest)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	if _, err := io.ReadFull(r, make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := io.Copy(io.Discard, r); !errors.Is(err, context.Canceled) {
		t.Fatalf("reading after cancel: %v, want context.Canceled", err)
	}
}
