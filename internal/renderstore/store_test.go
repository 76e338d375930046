//go:build integration

package renderstore

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

var env *envtest.Env

func TestMain(m *testing.M) { envtest.Run(m, &env) }

// newBundle creates a Bundle of a BundleDeployment named bd.
func newBundle(t *testing.T, bd string) *v1alpha2.Bundle {
	t.Helper()
	b := &v1alpha2.Bundle{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName(bd), Labels: map[string]string{v1alpha2.LabelBundleDeployment: bd}},
		Spec: v1alpha2.BundleSpec{ProvisionerClassName: v1alpha2.ClassHelm, Sources: []v1alpha2.BundleSource{{
			Type: v1alpha2.SourceTypeUpload, Upload: &v1alpha2.UploadSource{Digest: "sha256:" + strings.Repeat("a", 64)},
		}}},
	}
	if err := env.Client.Create(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	return b
}

// newStore returns a Store in a namespace of its own, reading through r
// (env.Client when nil), with chunks of chunkSize bytes (ChunkSize when 0).
func newStore(t *testing.T, ns string, r client.Reader, chunkSize int, o Options) *Store {
	t.Helper()
	if r == nil {
		r = env.Client
	}
	s := New(env.Client, r, ns, o)
	if chunkSize > 0 {
		s.chunkSize = chunkSize
	}
	return s
}

// saved returns want as Save stores it for b.
func saved(want Render, b *v1alpha2.Bundle) Render {
	want.Revision, want.BundleUID = b.Name, b.UID
	return want
}

// chunkSecrets returns the chunk Secrets of b's render, by index.
func chunkSecrets(t *testing.T, ns string, b *v1alpha2.Bundle) map[int]corev1.Secret {
	t.Helper()
	list := &corev1.SecretList{}
	if err := env.Client.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{LabelRenderOf: labelValue(b.Name)}); err != nil {
		t.Fatal(err)
	}
	out := map[int]corev1.Secret{}
	for _, sec := range list.Items {
		i, ok := chunkIndex(b.Name, sec.Name)
		if !ok {
			t.Fatalf("Secret %s is labelled for %s", sec.Name, b.Name)
		}
		out[i] = sec
	}
	return out
}

// resourceVersions returns the resourceVersion of each chunk Secret.
func resourceVersions(t *testing.T, ns string, b *v1alpha2.Bundle) map[int]string {
	t.Helper()
	out := map[int]string{}
	for i, sec := range chunkSecrets(t, ns, b) {
		out[i] = sec.ResourceVersion
	}
	return out
}

// readCounter counts the reads of whole Secrets and of metadata it
// passes to the API server.
type readCounter struct {
	client.Reader
	secrets, metadata atomic.Int32
}

func (c *readCounter) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*metav1.PartialObjectMetadata); ok {
		c.metadata.Add(1)
	} else {
		c.secrets.Add(1)
	}
	return c.Reader.Get(ctx, key, obj, opts...)
}

func TestSaveLoadRoundTrip(t *testing.T) {
	ctx := context.Background()
	b := newBundle(t, "shop")
	s := newStore(t, v1alpha2.SystemNamespace, nil, 0, Options{})
	in := sampleRender()
	if err := s.Save(ctx, b, in); err != nil {
		t.Fatal(err)
	}
	want := saved(sampleRender(), b)
	// A restarted manager (a new Store) and the Store that saved.
	for _, st := range []*Store{newStore(t, v1alpha2.SystemNamespace, nil, 0, Options{}), s} {
		got, err := st.Load(ctx, b.Name)
		if err != nil {
			t.Fatal(err)
		}
		assertSame(t, got, want)
		// What Load returns is the caller's.
		got.Objects[0].SetLabels(map[string]string{"changed": "yes"})
		got.Answers["list"][0] = 'X'
		again, err := st.Load(ctx, b.Name)
		if err != nil {
			t.Fatal(err)
		}
		assertSame(t, again, want)
	}
	// The caller's render is the caller's too.
	in.Objects[1].SetName("changed-after-save")
	got, err := s.Load(ctx, b.Name)
	if err != nil {
		t.Fatal(err)
	}
	assertSame(t, got, want)

	secs := chunkSecrets(t, v1alpha2.SystemNamespace, b)
	if len(secs) != 1 {
		t.Fatalf("%d chunks, want 1", len(secs))
	}
	sec := secs[0]
	if sec.Name != "render-"+b.Name+"-0" || sec.Type != SecretType || sec.Immutable == nil || !*sec.Immutable {
		t.Fatalf("chunk %s of type %s, immutable %v", sec.Name, sec.Type, sec.Immutable)
	}
	if sec.Labels[LabelRenderOf] != b.Name || sec.Labels[v1alpha2.LabelBundleDeployment] != "shop" {
		t.Fatalf("chunk labels %v", sec.Labels)
	}
	wantOwner := metav1.OwnerReference{APIVersion: "core.rukpak.io/v1alpha2", Kind: "Bundle", Name: b.Name, UID: b.UID}
	if len(sec.OwnerReferences) != 1 || sec.OwnerReferences[0] != wantOwner {
		t.Fatalf("owner references %+v, want %+v", sec.OwnerReferences, wantOwner)
	}
}

// TestLargeRenderIsSplit saves a render that hardly compresses into
// several chunks of ChunkSize, each a Secret under the 1 MiB limit.
func TestLargeRenderIsSplit(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "render")
	b := newBundle(t, "big")
	s := newStore(t, ns, nil, 0, Options{})
	in := Render{FormatVersion: "helm/v1", Objects: randomObjects(t, 50, 100<<10)} // 5 MiB of base64
	if err := s.Save(ctx, b, in); err != nil {
		t.Fatal(err)
	}
	secs := chunkSecrets(t, ns, b)
	if len(secs) < 4 {
		t.Fatalf("%d chunks, want more than 3", len(secs))
	}
	for i := range len(secs) {
		sec, ok := secs[i]
		if !ok {
			t.Fatalf("chunk %d is missing", i)
		}
		n := len(sec.Data[dataKey])
		if n > ChunkSize || (i < len(secs)-1 && n != ChunkSize) {
			t.Fatalf("chunk %d holds %d bytes (chunk size %d)", i, n, ChunkSize)
		}
		if sec.Annotations[annotationChunks] != strconv.Itoa(len(secs)) || len(sec.OwnerReferences) != 1 || sec.OwnerReferences[0].UID != b.UID {
			t.Fatalf("chunk %d: annotations %v, owners %v", i, sec.Annotations, sec.OwnerReferences)
		}
	}
	r := &readCounter{Reader: env.Client}
	got, err := newStore(t, ns, r, 0, Options{}).Load(ctx, b.Name)
	if err != nil {
		t.Fatal(err)
	}
	assertSame(t, got, saved(in, b))
	if n := int(r.secrets.Load()); n != len(secs) {
		t.Fatalf("Load read %d Secrets, want %d", n, len(secs))
	}
}

// TestLoadUsesTheCache: a render the Store saved or loaded is read again
// from chunk 0's metadata only; a changed payload checksum is read in full.
func TestLoadUsesTheCache(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "render")
	b := newBundle(t, "cached")
	r := &readCounter{Reader: env.Client}
	s := newStore(t, ns, r, 2<<10, Options{})
	if err := s.Save(ctx, b, Render{Objects: randomObjects(t, 4, 2<<10)}); err != nil {
		t.Fatal(err)
	}
	n := len(chunkSecrets(t, ns, b))
	for range 3 {
		if _, err := s.Load(ctx, b.Name); err != nil {
			t.Fatal(err)
		}
	}
	if r.secrets.Load() != 0 || r.metadata.Load() != 3 {
		t.Fatalf("three Loads after Save read %d Secrets and %d metadata, want 0 and 3", r.secrets.Load(), r.metadata.Load())
	}
	r2 := &readCounter{Reader: env.Client}
	fresh := newStore(t, ns, r2, 2<<10, Options{})
	for range 3 {
		if _, err := fresh.Load(ctx, b.Name); err != nil {
			t.Fatal(err)
		}
	}
	if int(r2.secrets.Load()) != n || r2.metadata.Load() != 3 {
		t.Fatalf("three Loads by a new Store read %d Secrets and %d metadata, want %d and 3", r2.secrets.Load(), r2.metadata.Load(), n)
	}

	// Loads at once, each changing what it got.
	shared := newStore(t, ns, nil, 2<<10, Options{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			got, err := shared.Load(ctx, b.Name)
			if err == nil {
				got.Objects[0].SetName("mine")
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got, err := shared.Load(ctx, b.Name)
	if err != nil || got.Objects[0].GetName() != "cm-00000" {
		t.Fatalf("Load after concurrent Loads = %v, %v", got, err)
	}
}

func TestLoadNotFound(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "render")
	b := newBundle(t, "gone")
	s := newStore(t, ns, nil, 0, Options{})
	check := func(when string) {
		t.Helper()
		r, err := s.Load(ctx, b.Name)
		if !errors.Is(err, ErrNotFound) || errors.Is(err, ErrCorrupt) || r != nil {
			t.Fatalf("Load %s = %v, %v; want ErrNotFound", when, r, err)
		}
		if got := Reason(err); got != EventRenderLost {
			t.Fatalf("Reason = %q, want %q", got, EventRenderLost)
		}
	}
	check("before any Save")
	if err := s.Save(ctx, b, sampleRender()); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, b.Name); err != nil {
		t.Fatal(err)
	}
	if n := len(chunkSecrets(t, ns, b)); n != 0 {
		t.Fatalf("%d chunks left after Delete", n)
	}
	check("after Delete")
	if err := s.Delete(ctx, b.Name); err != nil {
		t.Fatalf("deleting nothing: %v", err)
	}
}

func equalMaps(a, b map[int]string) bool {
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

func gunzip(t *testing.T, data []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := out.ReadFrom(zr); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// writePayload replaces b's stored chunks with data, cut and annotated as
// Save does (with consistent checksums).
func writePayload(t *testing.T, s *Store, b *v1alpha2.Bundle, data []byte) {
	t.Helper()
	ctx := context.Background()
	if err := s.Delete(ctx, b.Name); err != nil {
		t.Fatal(err)
	}
	chunks := split(data, s.chunkSize)
	sum := sha256.Sum256(data)
	for i := range chunks {
		if err := env.Client.Create(ctx, s.chunk(b, "team", i, chunks, hex.EncodeToString(sum[:]), int64(len(data)))); err != nil {
			t.Fatal(err)
		}
	}
}

// replaceChunk deletes chunk i of b's render and creates what change makes
// of it (chunks are immutable).
func replaceChunk(t *testing.T, ns string, b *v1alpha2.Bundle, i int, change func(*corev1.Secret)) {
	t.Helper()
	ctx := context.Background()
	sec := chunkSecrets(t, ns, b)[i]
	if err := env.Client.Delete(ctx, &sec); err != nil {
		t.Fatal(err)
	}
	sec.ResourceVersion, sec.UID, sec.CreationTimestamp, sec.ManagedFields = "", types.UID(""), metav1.Time{}, nil
	change(&sec)
	if err := env.Client.Create(ctx, &sec); err != nil {
		t.Fatal(err)
	}
}

// annotateChunk sets annotations of chunk i of b's render (metadata of
// an immutable Secret may change).
func annotateChunk(t *testing.T, ns string, b *v1alpha2.Bundle, i int, set map[string]string) {
	t.Helper()
	sec := chunkSecrets(t, ns, b)[i]
	for k, v := range set {
		sec.Annotations[k] = v
	}
	if err := env.Client.Update(context.Background(), &sec); err != nil {
		t.Fatal(err)
	}
}
