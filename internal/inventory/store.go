package inventory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// labelInventoryOf names the owner of an inventory chunk.
	labelInventoryOf = "core.rukpak.io/inventory-of"
	// labelInventoryUID is the UID of the owner of an inventory chunk.
	labelInventoryUID = "core.rukpak.io/inventory-uid"
	// annotationChunks on chunk 0 is how many chunks the inventory has.
	annotationChunks = "core.rukpak.io/chunks"
	// annotationGeneration ties the chunks of one save together.
	annotationGeneration = "core.rukpak.io/inventory-generation"
	dataKey              = "ids.gz"
	// defaultChunkSize keeps every chunk far below the 1 MiB object limit.
	defaultChunkSize = 512 << 10
)

// Store reads and writes inventories in one namespace. It remembers what it
// last saved or loaded, so repeated loads and unchanged saves cost nothing;
// it assumes it is the only writer (one active manager).
//
// Inventories are tied to their owner's UID: a BundleDeployment created
// under the name of a deleted one (whose inventory was left behind) starts
// with none, so it adopts and prunes nothing of the old one's.
type Store struct {
	c         client.Client
	live      client.Reader
	namespace string
	chunkSize int

	mu    sync.Mutex
	known map[types.UID]saved

	// rel are the release records (see Release).
	rel releases
}

// Owner is whose inventory: a BundleDeployment, by name and UID.
type Owner struct {
	// Name is the BundleDeployment's name (a label on the chunks, for
	// people).
	Name string
	// UID is the BundleDeployment's UID, which names the chunks.
	UID types.UID
}

// String names the owner for messages.
func (o Owner) String() string { return fmt.Sprintf("%s (uid %s)", o.Name, o.UID) }

type saved struct {
	ids    []ID
	recs   map[ID]Record
	hash   string
	chunks int
}

// NewStore returns a Store that writes with c and reads with live in
// namespace. live may be the manager's cache: the Store reads only
// inventories it has not written itself (after a restart, or of a new
// owner), and a chunk from another save than chunk 0 is refused.
func NewStore(c client.Client, live client.Reader, namespace string) *Store {
	return &Store{c: c, live: live, namespace: namespace, chunkSize: defaultChunkSize, known: map[types.UID]saved{}}
}

// chunkName is the name of chunk i of owner's inventory. UIDs have a
// fixed length, so no chunk of one owner has the name of another's.
func chunkName(owner Owner, i int) string {
	if i == 0 {
		return "inventory-" + string(owner.UID)
	}
	return fmt.Sprintf("inventory-%s-%d", owner.UID, i)
}

// Load returns owner's inventory; an owner without one has none.
func (s *Store) Load(ctx context.Context, owner Owner) ([]ID, error) {
	k, err := s.load(ctx, owner)
	if err != nil {
		return nil, err
	}
	return append([]ID(nil), k.ids...), nil
}

// Records returns what was last applied of the objects of owner's
// inventory, by ID.Key(); objects without a record are absent.
func (s *Store) Records(ctx context.Context, owner Owner) (map[ID]Record, error) {
	k, err := s.load(ctx, owner)
	if err != nil {
		return nil, err
	}
	out := make(map[ID]Record, len(k.recs))
	for id, rec := range k.recs {
		out[id] = rec
	}
	return out, nil
}

// load returns what the Store knows of owner's inventory, reading it
// once.
func (s *Store) load(ctx context.Context, owner Owner) (saved, error) {
	if owner.UID == "" {
		return saved{}, fmt.Errorf("inventory of %s: no UID", owner.Name)
	}
	s.mu.Lock()
	k, ok := s.known[owner.UID]
	s.mu.Unlock()
	if ok {
		return k, nil
	}
	ids, recs, chunks, err := s.read(ctx, owner)
	if err != nil {
		return saved{}, err
	}
	return s.remember(owner, ids, recs, chunks), nil
}

// read returns owner's inventory, its records and how many chunks hold it.
func (s *Store) read(ctx context.Context, owner Owner) ([]ID, map[ID]Record, int, error) {
	first := &corev1.ConfigMap{}
	if err := s.live.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: chunkName(owner, 0)}, first); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, 0, nil
		}
		return nil, nil, 0, fmt.Errorf("reading inventory of %s: %w", owner, err)
	}
	if got := first.Labels[labelInventoryUID]; got != string(owner.UID) {
		return nil, nil, 0, fmt.Errorf("inventory of %s: chunk %s is labelled for uid %q", owner, first.Name, got)
	}
	n, err := strconv.Atoi(first.Annotations[annotationChunks])
	if err != nil || n < 1 {
		return nil, nil, 0, fmt.Errorf("inventory of %s: bad chunk count %q", owner, first.Annotations[annotationChunks])
	}
	data := append([]byte(nil), first.BinaryData[dataKey]...)
	gen := first.Annotations[annotationGeneration]
	for i := 1; i < n; i++ {
		cm := &corev1.ConfigMap{}
		if err := s.live.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: chunkName(owner, i)}, cm); err != nil {
			return nil, nil, 0, fmt.Errorf("reading inventory chunk %d of %s: %w", i, owner, err)
		}
		if cm.Annotations[annotationGeneration] != gen || cm.Labels[labelInventoryUID] != string(owner.UID) {
			return nil, nil, 0, fmt.Errorf("inventory chunk %d of %s is from another save", i, owner)
		}
		data = append(data, cm.BinaryData[dataKey]...)
	}
	ids, recs, err := decode(data)
	return ids, recs, n, err
}

// Save records ids as owner's inventory, keeping the records it has of
// those of them that are recorded already (it is saved before a write, so
// that objects of a revision that fails half-way are known). Saving what
// is recorded already makes no request.
func (s *Store) Save(ctx context.Context, owner Owner, ids []ID) error {
	k, err := s.load(ctx, owner)
	if err != nil {
		return err
	}
	return s.SaveApplied(ctx, owner, ids, k.recs)
}

// SaveApplied records ids as owner's inventory with recs, what was applied
// of them (by ID.Key(); records of objects not in ids are dropped). Saving
// what is recorded already makes no request.
func (s *Store) SaveApplied(ctx context.Context, owner Owner, ids []ID, recs map[ID]Record) error {
	if owner.UID == "" {
		return fmt.Errorf("saving inventory of %s: no UID", owner.Name)
	}
	inv, err := chunked(s.namespace, owner, ids, recs, s.chunkSize)
	if err != nil {
		return err
	}
	s.mu.Lock()
	k, ok := s.known[owner.UID]
	s.mu.Unlock()
	if ok && k.hash == inv.hash {
		return nil
	}
	// Later chunks first, so chunk 0 (which says how many there are) is
	// only written once the rest is in place.
	for i := len(inv.chunks) - 1; i >= 0; i-- {
		if err := s.put(ctx, inv.chunks[i], ok && i < k.chunks); err != nil {
			return fmt.Errorf("saving inventory of %s: %w", owner, err)
		}
	}
	if !ok || k.chunks > len(inv.chunks) {
		if err := s.deleteChunks(ctx, owner, len(inv.chunks)); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.known[owner.UID] = saved{ids: inv.ids, recs: inv.recs, hash: inv.hash, chunks: len(inv.chunks)}
	s.mu.Unlock()
	return nil
}

// Chunks returns the ConfigMaps, chunk 0 first, that a Store writing into
// namespace saves as owner's inventory of ids with recs (see SaveApplied).
// It is what a client that makes the manager's requests (the bench's
// request floor) sends.
func Chunks(namespace string, owner Owner, ids []ID, recs map[ID]Record) ([]*corev1.ConfigMap, error) {
	inv, err := chunked(namespace, owner, ids, recs, defaultChunkSize)
	return inv.chunks, err
}

// inventoryChunks is one save of an inventory: the IDs, sorted, the
// records kept of them, the hash of their encoding and the chunks that
// hold it.
type inventoryChunks struct {
	ids    []ID
	recs   map[ID]Record
	hash   string
	chunks []*corev1.ConfigMap
}

// chunked encodes ids with their records in recs and splits the encoding
// into ConfigMaps of at most size bytes of data each.
func chunked(namespace string, owner Owner, ids []ID, recs map[ID]Record, size int) (inventoryChunks, error) {
	ids = Sorted(ids)
	kept := make(map[ID]Record, len(ids))
	for _, id := range ids {
		if rec, ok := recs[id.Key()]; ok && rec.valid() {
			kept[id.Key()] = rec
		}
	}
	data, err := encode(ids, kept)
	if err != nil {
		return inventoryChunks{}, err
	}
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:])
	parts := split(data, size)
	chunks := make([]*corev1.ConfigMap, len(parts))
	for i, part := range parts {
		chunks[i] = &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name:        chunkName(owner, i),
				Namespace:   namespace,
				Labels:      map[string]string{labelInventoryOf: owner.Name, labelInventoryUID: string(owner.UID)},
				Annotations: map[string]string{annotationGeneration: hash[:16]},
			},
			BinaryData: map[string][]byte{dataKey: part},
		}
	}
	chunks[0].Annotations[annotationChunks] = strconv.Itoa(len(chunks))
	return inventoryChunks{ids: ids, recs: kept, hash: hash, chunks: chunks}, nil
}

// put creates cm or replaces the existing one; exists says which to try
// first (a chunk this Store read or wrote is there).
func (s *Store) put(ctx context.Context, cm *corev1.ConfigMap, exists bool) error {
	if !exists {
		err := s.c.Create(ctx, cm)
		if !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	cur := &corev1.ConfigMap{}
	if err := s.live.Get(ctx, client.ObjectKeyFromObject(cm), cur); err != nil {
		return err
	}
	cm.ResourceVersion = cur.ResourceVersion
	return s.c.Update(ctx, cm)
}

// deleteChunks deletes owner's chunks from index from on.
func (s *Store) deleteChunks(ctx context.Context, owner Owner, from int) error {
	list := &corev1.ConfigMapList{}
	if err := s.live.List(ctx, list, client.InNamespace(s.namespace), client.MatchingLabels{labelInventoryUID: string(owner.UID)}); err != nil {
		return fmt.Errorf("listing inventory chunks of %s: %w", owner, err)
	}
	keep := map[string]bool{}
	for i := 0; i < from; i++ {
		keep[chunkName(owner, i)] = true
	}
	for i := range list.Items {
		if keep[list.Items[i].Name] {
			continue
		}
		if err := s.c.Delete(ctx, &list.Items[i]); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting inventory chunk %s: %w", list.Items[i].Name, err)
		}
	}
	return nil
}

// Delete removes owner's inventory.
func (s *Store) Delete(ctx context.Context, owner Owner) error {
	if err := s.deleteChunks(ctx, owner, 0); err != nil {
		return err
	}
	s.Forget(owner)
	return nil
}

// Forget drops what the Store remembers of owner; the next Load reads the
// cluster.
func (s *Store) Forget(owner Owner) {
	s.mu.Lock()
	delete(s.known, owner.UID)
	s.mu.Unlock()
}

// remember keeps what was read of owner's inventory and returns it. The
// hash is that of the encoding Save would write, so saving it unchanged
// makes no request.
func (s *Store) remember(owner Owner, ids []ID, recs map[ID]Record, chunks int) saved {
	ids = Sorted(ids)
	if recs == nil {
		recs = map[ID]Record{}
	}
	k := saved{ids: ids, recs: recs, chunks: chunks}
	if data, err := encode(ids, recs); err == nil {
		sum := sha256.Sum256(data)
		k.hash = hex.EncodeToString(sum[:])
	}
	s.mu.Lock()
	s.known[owner.UID] = k
	s.mu.Unlock()
	return k
}

func split(data []byte, size int) [][]byte {
	if len(data) == 0 {
		return [][]byte{nil}
	}
	var out [][]byte
	for len(data) > size {
		out = append(out, data[:size])
		data = data[size:]
	}
	return append(out, data)
}
