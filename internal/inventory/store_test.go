//go:build integration

package inventory

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

var env *envtest.Env

func TestMain(m *testing.M) { envtest.Run(m, &env) }

func ids(n int) []ID {
	out := make([]ID, n)
	for i := range out {
		out[i] = ID{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: fmt.Sprintf("object-with-a-longish-name-%05d", i)}
	}
	return out
}

func chunks(t *testing.T, owner Owner) int {
	t.Helper()
	list := &corev1.ConfigMapList{}
	if err := env.Client.List(context.Background(), list, client.InNamespace(v1alpha2.SystemNamespace), client.MatchingLabels{labelInventoryUID: string(owner.UID)}); err != nil {
		t.Fatal(err)
	}
	for _, cm := range list.Items {
		if n := len(cm.BinaryData[dataKey]); n > 900<<10 {
			t.Fatalf("chunk %s is %d bytes", cm.Name, n)
		}
	}
	return len(list.Items)
}

func TestStoreRoundTripAndChunking(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name       string
		chunkSize  int
		sizes      []int // successive saves
		wantChunks int   // after the last save
	}{
		{name: "small", chunkSize: defaultChunkSize, sizes: []int{3}, wantChunks: 1},
		{name: "ten thousand in one chunk", chunkSize: defaultChunkSize, sizes: []int{10000}, wantChunks: 1},
		{name: "grows into chunks", chunkSize: 2 << 10, sizes: []int{10, 10000}, wantChunks: -1},
		{name: "shrinks and drops chunks", chunkSize: 2 << 10, sizes: []int{10000, 5}, wantChunks: 1},
		{name: "empty", chunkSize: defaultChunkSize, sizes: []int{5, 0}, wantChunks: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			owner := Owner{Name: envtest.UniqueName("inv"), UID: uuid.NewUUID()}
			w := NewStore(env.Client, env.Client, v1alpha2.SystemNamespace)
			w.chunkSize = tt.chunkSize
			var last []ID
			for _, n := range tt.sizes {
				last = ids(n)
				if err := w.Save(ctx, owner, last); err != nil {
					t.Fatal(err)
				}
			}
			// A fresh Store (a restarted manager) reads what was saved.
			r := NewStore(env.Client, env.Client, v1alpha2.SystemNamespace)
			got, err := r.Load(ctx, owner)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(Sorted(got), Sorted(last)) && !(len(got) == 0 && len(last) == 0) {
				t.Fatalf("loaded %d IDs, want %d", len(got), len(last))
			}
			n := chunks(t, owner)
			if tt.wantChunks > 0 && n != tt.wantChunks {
				t.Fatalf("%d chunks, want %d", n, tt.wantChunks)
			}
			if tt.wantChunks < 0 && n < 2 {
				t.Fatalf("%d chunks, want several", n)
			}
			if err := r.Delete(ctx, owner); err != nil {
				t.Fatal(err)
			}
			if n := chunks(t, owner); n != 0 {
				t.Fatalf("%d chunks left after Delete", n)
			}
			if got, err := NewStore(env.Client, env.Client, v1alpha2.SystemNamespace).Load(ctx, owner); err != nil || len(got) != 0 {
				t.Fatalf("Load after Delete = %v, %v; want none", got, err)
			}
		})
	}
}

// TestStoreTiedToUID: a BundleDeployment created under the name of a
// deleted one (whose inventory was left behind) starts with an empty
// inventory, and saving or deleting its own leaves the old one alone.
func TestStoreTiedToUID(t *testing.T) {
	ctx := context.Background()
	name := envtest.UniqueName("inv")
	old := Owner{Name: name, UID: uuid.NewUUID()}
	reused := Owner{Name: name, UID: uuid.NewUUID()}
	w := NewStore(env.Client, env.Client, v1alpha2.SystemNamespace)
	if err := w.Save(ctx, old, ids(3)); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Store{w, NewStore(env.Client, env.Client, v1alpha2.SystemNamespace)} {
		got, err := s.Load(ctx, reused)
		if err != nil || len(got) != 0 {
			t.Fatalf("Load of the new owner = %v, %v; want none", got, err)
		}
	}
	if err := w.Save(ctx, reused, ids(1)); err != nil {
		t.Fatal(err)
	}
	if err := w.Delete(ctx, reused); err != nil {
		t.Fatal(err)
	}
	got, err := NewStore(env.Client, env.Client, v1alpha2.SystemNamespace).Load(ctx, old)
	if err != nil || len(got) != 3 {
		t.Fatalf("old owner's inventory after the new one's Save and Delete = %d IDs, %v; want 3", len(got), err)
	}
	if _, err := w.Load(ctx, Owner{Name: name}); err == nil {
		t.Fatal("Load without a UID: want an error")
	}
	if err := w.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
}

// TestStoreRefusesChunkOfAnotherUID: a chunk 0 whose UID label is not the
// owner's (written by hand under its name) is refused, not read.
func TestStoreRefusesChunkOfAnotherUID(t *testing.T) {
	ctx := context.Background()
	owner := Owner{Name: envtest.UniqueName("inv"), UID: uuid.NewUUID()}
	cm := &corev1.ConfigMap{}
	cm.Name = chunkName(owner, 0)
	cm.Namespace = v1alpha2.SystemNamespace
	cm.Labels = map[string]string{labelInventoryOf: owner.Name, labelInventoryUID: "someone-else"}
	cm.Annotations = map[string]string{annotationChunks: "1"}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, cm) })
	_, err := NewStore(env.Client, env.Client, v1alpha2.SystemNamespace).Load(ctx, owner)
	if err == nil || !strings.Contains(err.Error(), `labelled for uid "someone-else"`) {
		t.Fatalf("Load = %v; want a refusal naming the other uid", err)
	}
}

// TestRecordsSurviveARestart: what was applied is read back by a fresh
// Store; a save before a write keeps the records of the objects still
// listed and drops the others'; saving the same records again leaves the
// chunk as it was (its resourceVersion stays).
func TestRecordsSurviveARestart(t *testing.T) {
	ctx := context.Background()
	owner := Owner{Name: envtest.UniqueName("inv"), UID: uuid.NewUUID()}
	all := ids(4)
	recs := map[ID]Record{}
	for i, id := range all[:3] {
		recs[id.Key()] = Record{Hash: fmt.Sprintf("h%d", i), ResourceVersion: fmt.Sprint(10 + i), Generation: int64(i)}
	}
	w := NewStore(env.Client, env.Client, v1alpha2.SystemNamespace)
	if err := w.SaveApplied(ctx, owner, all, recs); err != nil {
		t.Fatal(err)
	}
	r := NewStore(env.Client, env.Client, v1alpha2.SystemNamespace)
	got, err := r.Records(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, recs) {
		t.Fatalf("records after a restart = %v, want %v", got, recs)
	}

	// The next revision drops all[0] and adds a new object: saved before
	// its write, the records of all[1] and all[2] stay.
	next := append(append([]ID{}, all[1:]...), ids(5)[4])
	if err := r.Save(ctx, owner, next); err != nil {
		t.Fatal(err)
	}
	got, err = NewStore(env.Client, env.Client, v1alpha2.SystemNamespace).Records(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	want := map[ID]Record{all[1].Key(): recs[all[1].Key()], all[2].Key(): recs[all[2].Key()]}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("records after a save of the next revision = %v, want %v", got, want)
	}

	cm := &corev1.ConfigMap{}
	key := client.ObjectKey{Namespace: v1alpha2.SystemNamespace, Name: chunkName(owner, 0)}
	if err := env.Client.Get(ctx, key, cm); err != nil {
		t.Fatal(err)
	}
	rv := cm.ResourceVersion
	fresh := NewStore(env.Client, env.Client, v1alpha2.SystemNamespace)
	if err := fresh.SaveApplied(ctx, owner, next, want); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, key, cm); err != nil {
		t.Fatal(err)
	}
	if cm.ResourceVersion != rv {
		t.Fatalf("saving what was recorded wrote the inventory (resourceVersion %s -> %s)", rv, cm.ResourceVersion)
	}
}

// TestChunksAreWhatAStoreWrites: Chunks returns the ConfigMaps a Store
// saves for the same inventory (names, labels, annotations and data), so a
// client that makes the manager's requests sends the manager's bodies.
func TestChunksAreWhatAStoreWrites(t *testing.T) {
	ctx := context.Background()
	owner := Owner{Name: envtest.UniqueName("inv"), UID: uuid.NewUUID()}
	saved := ids(3)
	recs := map[ID]Record{saved[1].Key(): {Hash: "0123456789abcdef0123456789abcdef", ResourceVersion: "42"}}
	if err := NewStore(env.Client, env.Client, v1alpha2.SystemNamespace).SaveApplied(ctx, owner, saved, recs); err != nil {
		t.Fatal(err)
	}
	want, err := Chunks(v1alpha2.SystemNamespace, owner, saved, recs)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 1 {
		t.Fatalf("Chunks returned %d chunks, want 1", len(want))
	}
	got := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(want[0]), got); err != nil {
		t.Fatalf("the Store wrote no chunk named %s: %v", want[0].Name, err)
	}
	if !reflect.DeepEqual(got.Labels, want[0].Labels) || !reflect.DeepEqual(got.Annotations, want[0].Annotations) ||
		!reflect.DeepEqual(got.BinaryData, want[0].BinaryData) {
		t.Fatalf("the Store wrote\n%v %v %v\nChunks returned\n%v %v %v", got.Labels, got.Annotations, got.BinaryData,
			want[0].Labels, want[0].Annotations, want[0].BinaryData)
	}
}
