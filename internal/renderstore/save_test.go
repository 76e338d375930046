//go:build integration

package renderstore

import (
	"compress/gzip"
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// TestSaveIsIdempotent: saving what is stored writes nothing, even when it
// was compressed otherwise; another render of the same Bundle stands; a
// render of an older Bundle of the same name is replaced.
func TestSaveIsIdempotent(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "render")
	b := newBundle(t, "again")
	s := newStore(t, ns, nil, 4<<10, Options{})
	in := Render{ContentDigest: "sha256:1", Objects: randomObjects(t, 6, 2<<10)}
	if err := s.Save(ctx, b, in); err != nil {
		t.Fatal(err)
	}
	before := resourceVersions(t, ns, b)
	if len(before) < 2 {
		t.Fatalf("%d chunks, want several", len(before))
	}
	for _, st := range []*Store{s, newStore(t, ns, nil, 4<<10, Options{})} {
		if err := st.Save(ctx, b, in); err != nil {
			t.Fatalf("saving the same render again: %v", err)
		}
	}
	if after := resourceVersions(t, ns, b); !equalMaps(before, after) {
		t.Fatalf("saving the same render again wrote chunks: %v, then %v", before, after)
	}

	// The same JSON compressed by another build.
	enc, err := encode(&Render{Revision: b.Name, BundleUID: b.UID, ContentDigest: in.ContentDigest, Objects: in.Objects}, DefaultMaxSize)
	if err != nil {
		t.Fatal(err)
	}
	writePayload(t, s, b, gzipBytes(t, gunzip(t, enc.data), gzip.BestSpeed))
	before = resourceVersions(t, ns, b)
	if err := newStore(t, ns, nil, 4<<10, Options{}).Save(ctx, b, in); err != nil {
		t.Fatalf("saving the same render compressed otherwise: %v", err)
	}
	if after := resourceVersions(t, ns, b); !equalMaps(before, after) {
		t.Fatalf("saving the same render compressed otherwise wrote chunks: %v, then %v", before, after)
	}

	// Another render stands.
	other := Render{ContentDigest: "sha256:1", Objects: randomObjects(t, 1, 100)}
	if err := s.Save(ctx, b, other); !errors.Is(err, ErrExists) {
		t.Fatalf("saving another render: %v, want ErrExists", err)
	}
	got, err := newStore(t, ns, nil, 4<<10, Options{}).Load(ctx, b.Name)
	if err != nil {
		t.Fatal(err)
	}
	assertSame(t, got, saved(in, b))

	// A Bundle deleted and created again under its name is another
	// revision: its render replaces the old one's.
	recreated := b.DeepCopy()
	recreated.UID = uuid.NewUUID()
	if err := s.Save(ctx, recreated, other); err != nil {
		t.Fatalf("saving the render of a new Bundle of the same name: %v", err)
	}
	got, err = newStore(t, ns, nil, 4<<10, Options{}).Load(ctx, b.Name)
	if err != nil {
		t.Fatal(err)
	}
	assertSame(t, got, saved(other, recreated))
	if n := len(chunkSecrets(t, ns, b)); n != 1 {
		t.Fatalf("%d chunks after replacing a larger render, want 1", n)
	}

	// Two Saves at once: the chunk one of them finds written must be the
	// same.
	sec := s.chunk(recreated, "team", 0, [][]byte{[]byte("x")}, sha256Hex([]byte("x")), 1)
	sec.Name = "render-race-0"
	if err := s.create(ctx, sec.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	if err := s.create(ctx, sec.DeepCopy()); err != nil {
		t.Fatalf("creating the same chunk twice: %v", err)
	}
	sec.Data[dataKey] = []byte("y")
	if err := s.create(ctx, sec.DeepCopy()); err == nil {
		t.Fatal("creating another chunk under an existing one's name succeeded")
	}
}

func TestSaveRefuses(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "render")
	b := newBundle(t, "refused")
	tests := []struct {
		name    string
		store   *Store
		bundle  *v1alpha2.Bundle
		r       Render
		wantErr error
	}{
		{name: "over the size limit", store: newStore(t, ns, nil, 0, Options{MaxSize: 4 << 10}), bundle: b,
			r: Render{Objects: randomObjects(t, 4, 2<<10)}, wantErr: ErrTooLarge},
		{name: "over the chunk limit", store: newStore(t, ns, nil, 1<<10, Options{MaxChunks: 3}), bundle: b,
			r: Render{Objects: randomObjects(t, 4, 2<<10)}, wantErr: ErrTooLarge},
		{name: "another Bundle's render", store: newStore(t, ns, nil, 0, Options{}), bundle: b, r: Render{Revision: "other"}},
		{name: "a Bundle without UID", store: newStore(t, ns, nil, 0, Options{}), bundle: &v1alpha2.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "x"}}},
		{name: "no Bundle", store: newStore(t, ns, nil, 0, Options{})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.store.Save(ctx, tt.bundle, tt.r)
			if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Fatalf("Save = %v, want %v", err, tt.wantErr)
			}
			if n := len(chunkSecrets(t, ns, b)); n != 0 {
				t.Fatalf("a refused Save wrote %d chunks", n)
			}
		})
	}
}
