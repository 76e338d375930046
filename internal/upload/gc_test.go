//go:build integration

package upload

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

func TestGC(t *testing.T) {
	later := func() time.Time { return time.Now().Add(time.Hour) }
	tests := []struct {
		name string
		// now is the GC's clock; reuse are uploads Put again at that time
		// before GC runs.
		now         func() time.Time
		inUse       []string
		reuse       []string
		touchOrphan bool
		wantKept    []string // uploads that stay readable
		wantChunks  []string // chunks that remain, by logical name
		wantDeleted int
	}{
		{name: "fresh uploads and chunks are kept",
			now: time.Now, inUse: nil,
			wantKept: []string{"a", "b"}, wantChunks: []string{"a1", "a2", "b2", "shared", "orphan"}},
		{name: "stale unused uploads and orphan chunks are deleted",
			now: later, inUse: []string{"a"},
			wantKept: []string{"a"}, wantChunks: []string{"a1", "a2", "shared"}, wantDeleted: 3},
		{name: "nothing in use",
			now:        later,
			wantChunks: []string{}, wantDeleted: 7},
		{name: "reused upload and chunk are kept",
			now: later, reuse: []string{"b"}, touchOrphan: true,
			wantKept: []string{"b"}, wantChunks: []string{"b2", "shared", "orphan"}, wantDeleted: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			s := newStore(t)
			// Upload a has chunks shared, a1, a2; upload b has shared, b2;
			// the orphan chunk belongs to no manifest (an upload in
			// progress or abandoned).
			chunk := map[string][]byte{}
			for i, name := range []string{"shared", "a1", "a2", "b2"} {
				chunk[name], _ = io.ReadAll(random(uint64(10+i), ChunkSize))
			}
			data := map[string][]byte{
				"a": slices.Concat(chunk["shared"], chunk["a1"], chunk["a2"][:100]),
				"b": slices.Concat(chunk["shared"], chunk["b2"][:200]),
			}
			chunk["a2"], chunk["b2"] = chunk["a2"][:100], chunk["b2"][:200]
			digests := map[string]string{"a": put(t, s, data["a"]), "b": put(t, s, data["b"])}
			chunk["orphan"] = []byte("orphan")
			orphan := s.chunk(hexSHA(chunk["orphan"]), chunk["orphan"])
			createWritten(t, s, orphan)

			at := NewStore(env.Client, env.Client, s.namespace)
			at.now = tt.now
			for _, u := range tt.reuse {
				if err := at.Put(ctx, bytes.NewReader(data[u]), digests[u], testUploader); err != nil {
					t.Fatal(err)
				}
			}
			if tt.touchOrphan {
				if err := at.touch(ctx, orphan.Name, nil); err != nil {
					t.Fatal(err)
				}
			}
			inUse := map[string]bool{}
			for _, u := range tt.inUse {
				inUse[digests[u]] = true
			}

			deleted, err := at.GC(ctx, inUse)
			if err != nil {
				t.Fatalf("GC: %v", err)
			}
			if deleted != tt.wantDeleted {
				t.Errorf("GC deleted %d ConfigMaps, want %d", deleted, tt.wantDeleted)
			}
			var wantNames []string
			for _, c := range tt.wantChunks {
				wantNames = append(wantNames, ChunkName(hexSHA(chunk[c])))
			}
			if got := slices.Sorted(maps.Keys(chunks(t, s))); !slices.Equal(got, slices.Sorted(slices.Values(wantNames))) {
				t.Errorf("chunks left %v, want %v (%v)", got, wantNames, tt.wantChunks)
			}
			for u, d := range digests {
				got, err := readAll(s, d)
				if slices.Contains(tt.wantKept, u) {
					if err != nil || !bytes.Equal(got, data[u]) {
						t.Errorf("upload %s: %d bytes, %v; want it kept", u, len(got), err)
					}
				} else if failure.Reason(err, "") != v1alpha2.ReasonSourceNotFound {
					t.Errorf("upload %s: %v, want SourceNotFound", u, err)
				}
			}
			if again, err := at.GC(ctx, inUse); err != nil || again != 0 {
				t.Errorf("second GC deleted %d, %v; want 0, nil", again, err)
			}
		})
	}
}

func hexSHA(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// createWritten creates cm as a Store would: with its field manager.
func createWritten(t *testing.T, s *Store, cm *corev1.ConfigMap) {
	t.Helper()
	cm.Immutable = ptr.To(true)
	if err := s.client.Create(context.Background(), cm); err != nil {
		t.Fatalf("creating %s: %v", cm.Name, err)
	}
}

// TestGCSparesForeignConfigMaps: GC deletes only ConfigMaps a Store wrote
// (name pattern, label, field manager), whoever labelled the others.
func TestGCSparesForeignConfigMaps(t *testing.T) {
	data := []byte("chunk data")
	sum := hexSHA(data)
	tests := []struct {
		name        string
		make        func(t *testing.T, s *Store) *corev1.ConfigMap
		wantDeleted bool
	}{
		{name: "a chunk the Store wrote is deleted", wantDeleted: true,
			make: func(t *testing.T, s *Store) *corev1.ConfigMap {
				cm := s.chunk(sum, data)
				createWritten(t, s, cm)
				return cm
			}},
		{name: "a manifest the Store wrote is deleted", wantDeleted: true,
			make: func(t *testing.T, s *Store) *corev1.ConfigMap {
				cm := (&manifest{digest: digestPrefix + sum, size: int64(len(data)), chunks: []chunkRef{{hex: sum, size: int64(len(data))}}}).configMap(s.namespace, sum, testUploader)
				createWritten(t, s, cm)
				return cm
			}},
		{name: "a chunk someone else created and labelled survives",
			make: func(t *testing.T, s *Store) *corev1.ConfigMap {
				cm := s.chunk(sum, data)
				createCM(t, cm)
				return cm
			}},
		{name: "a manifest someone else created survives",
			make: func(t *testing.T, s *Store) *corev1.ConfigMap {
				cm := (&manifest{digest: digestPrefix + sum, size: int64(len(data)), chunks: []chunkRef{{hex: sum, size: int64(len(data))}}}).configMap(s.namespace, sum, testUploader)
				createCM(t, cm)
				return cm
			}},
		{name: "a team's ConfigMap labelled as a chunk afterwards survives",
			make: func(t *testing.T, s *Store) *corev1.ConfigMap {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: "team-values"}, Data: map[string]string{"a": "b"}}
				if err := env.Client.Create(context.Background(), cm); err != nil {
					t.Fatal(err)
				}
				patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+LabelChunk+`":"true"}}}`))
				if err := env.Client.Patch(context.Background(), cm, patch); err != nil {
					t.Fatal(err)
				}
				return cm
			}},
		{name: "a ConfigMap of another name labelled by the Store's field manager survives",
			make: func(t *testing.T, s *Store) *corev1.ConfigMap {
				cm := s.chunk(sum, data)
				cm.Name = "upload-chunk-not-a-digest"
				createWritten(t, s, cm)
				return cm
			}},
		{name: "a chunk the Store wrote, relabelled by someone else, survives",
			make: func(t *testing.T, s *Store) *corev1.ConfigMap {
				cm := s.chunk(sum, data)
				cm.Labels = nil
				createWritten(t, s, cm)
				patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+LabelChunk+`":"true"}}}`))
				if err := env.Client.Patch(context.Background(), cm, patch); err != nil {
					t.Fatal(err)
				}
				return cm
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			s := newStore(t)
			s.now = func() time.Time { return time.Now().Add(time.Hour) }
			cm := tt.make(t, s)
			deleted, err := s.GC(ctx, map[string]bool{})
			if err != nil {
				t.Fatalf("GC: %v", err)
			}
			err = env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
			if gone := apierrors.IsNotFound(err); gone != tt.wantDeleted || (deleted == 1) != tt.wantDeleted {
				t.Fatalf("ConfigMap %s: get error %v, GC deleted %d; want deleted=%v", cm.Name, err, deleted, tt.wantDeleted)
			}
		})
	}
}
