package inventory

import (
	"context"
	"fmt"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Release records. When a BundleDeployment leaves one of its objects in
// place — a CRD kept on delete, an object with helm.sh/resource-policy:
// keep, an object another BundleDeployment waits for — the manager writes
// the object, by its metadata.uid, into the BundleDeployment's release
// record: the ConfigMap released-<its UID> in the system namespace. Another
// BundleDeployment may take such an object over only through that record,
// and only once: the first to take it is written into the entry, and no
// other may take it while that one exists.
//
// Why a record the manager writes, not a mark on the object: a tenant may
// be able to write the labels and annotations of objects in its namespace
// (and anyone who may patch a cluster-scoped object may write its), so any
// mark on the object — an annotation, a label, a field manager's name,
// which any client may claim — could be forged or copied back after a
// takeover, handing another team's live object to whoever names it. Only
// the manager writes ConfigMaps in the system namespace; the UID ties the
// release to the very object left in place (one deleted and created again
// under its name, even with copied labels, is not released); and the
// taker written into the entry makes a release usable once, so labels
// written back after a takeover give nothing to a third BundleDeployment.
const (
	releasedPrefix = "released-"
	// labelReleasedBy names the BundleDeployment that released the objects
	// of a record, labelReleasedUID its UID.
	labelReleasedBy  = "core.rukpak.io/released-by"
	labelReleasedUID = "core.rukpak.io/released-uid"
	// labelTakenByPrefix + a UID marks a record of which that
	// BundleDeployment takes objects, so that it can let go of them when
	// it is deleted (Settle).
	labelTakenByPrefix = "core.rukpak.io/taken-by-"
	releasedKey        = "released.gz"
)

// releasedName is the name of the release record of the BundleDeployment
// of uid.
func releasedName(uid types.UID) string { return releasedPrefix + string(uid) }

// releases is a Store's state of release records. Writes are made one at a
// time (mu); takes that arrive meanwhile wait in pending and are written
// together, one update per record, by whoever holds mu next — so that the
// 900 CRDs of a bundle taken at once cost a few writes, not 900.
type releases struct {
	mu sync.Mutex
	// known are the records last read or written, by the releaser's UID
	// (nil: there is none). One active manager writes them.
	known map[types.UID]*corev1.ConfigMap

	pmu     sync.Mutex
	pending []*takeRequest
}

// record returns the release record of the BundleDeployment of uid (nil
// when there is none) and its entries. The caller holds rel.mu.
func (s *Store) record(ctx context.Context, uid types.UID) (*corev1.ConfigMap, []Released, error) {
	if s.rel.known == nil {
		s.rel.known = map[types.UID]*corev1.ConfigMap{}
	}
	cm, ok := s.rel.known[uid]
	if !ok {
		cm = &corev1.ConfigMap{}
		err := s.live.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: releasedName(uid)}, cm)
		switch {
		case apierrors.IsNotFound(err):
			cm = nil
		case err != nil:
			return nil, nil, fmt.Errorf("reading release record of uid %s: %w", uid, err)
		}
		s.rel.known[uid] = cm
	}
	if cm == nil {
		return nil, nil, nil
	}
	if got := cm.Labels[labelReleasedUID]; got != string(uid) {
		return nil, nil, fmt.Errorf("release record %s is labelled for uid %q", cm.Name, got)
	}
	entries, err := decodeReleased(cm.BinaryData[releasedKey])
	if err != nil {
		return nil, nil, fmt.Errorf("release record %s: %w", cm.Name, err)
	}
	return cm.DeepCopy(), entries, nil
}

// write saves entries as the release record of owner (cm is the record as
// read, nil when there is none), deleting it when entries is empty. A
// conflict makes the Store read the record again next time. The caller
// holds rel.mu.
func (s *Store) write(ctx context.Context, owner Owner, cm *corev1.ConfigMap, entries []Released) error {
	if len(entries) == 0 {
		if cm != nil {
			err := s.c.Delete(ctx, cm, client.Preconditions{ResourceVersion: &cm.ResourceVersion})
			if err != nil && !apierrors.IsNotFound(err) {
				delete(s.rel.known, owner.UID)
				return fmt.Errorf("deleting release record of %s: %w", owner, err)
			}
		}
		s.rel.known[owner.UID] = nil
		return nil
	}
	data, err := encodeReleased(entries)
	if err != nil {
		return err
	}
	labels := map[string]string{labelReleasedBy: owner.Name, labelReleasedUID: string(owner.UID)}
	for _, e := range entries {
		if e.TakenBy.UID != "" {
			labels[labelTakenByPrefix+string(e.TakenBy.UID)] = "true"
		}
	}
	if cm == nil {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: releasedName(owner.UID), Namespace: s.namespace}}
		cm.Labels, cm.BinaryData = labels, map[string][]byte{releasedKey: data}
		err = s.c.Create(ctx, cm)
	} else {
		cm.Labels, cm.BinaryData = labels, map[string][]byte{releasedKey: data}
		err = s.c.Update(ctx, cm)
	}
	if err != nil {
		delete(s.rel.known, owner.UID)
		if apierrors.IsAlreadyExists(err) {
			// Written by an earlier process: read it, and try again.
			return apierrors.NewConflict(corev1.Resource("configmaps"), cm.Name, err)
		}
		return fmt.Errorf("saving release record of %s: %w", owner, err)
	}
	s.rel.known[owner.UID] = cm.DeepCopy()
	return nil
}

// Release records that owner left the objects kept in place, each still
// labelled as its own, for another BundleDeployment to take over, and
// forgets the objects of forget (owner applies them again, or deleted
// them). An object released again with the same UID keeps its taker. At
// most maxReleased objects are recorded; Release returns how many of kept
// were left out. Nothing to record and no record makes no request.
func (s *Store) Release(ctx context.Context, owner Owner, kept []Released, forget []ID) (int, error) {
	if owner.UID == "" {
		return 0, fmt.Errorf("release record of %s: no UID", owner.Name)
	}
	if len(kept) == 0 && len(forget) == 0 {
		return 0, nil
	}
	s.rel.mu.Lock()
	defer s.rel.mu.Unlock()
	left := 0
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cm, entries, err := s.record(ctx, owner.UID)
		if err != nil || (cm == nil && len(kept) == 0) {
			return err
		}
		byKey := make(map[ID]Released, len(entries)+len(kept))
		for _, e := range entries {
			byKey[e.ID.Key()] = e
		}
		for _, id := range forget {
			delete(byKey, id.Key())
		}
		left = 0
		for _, k := range kept {
			prev, ok := byKey[k.ID.Key()]
			switch {
			case ok && prev.UID == k.UID:
				k.TakenBy = prev.TakenBy
			case !ok && len(byKey) >= maxReleased:
				left++
				continue
			default:
				k.TakenBy = Owner{}
			}
			byKey[k.ID.Key()] = k
		}
		next := sortedReleased(byKey)
		if cm != nil && sameReleased(entries, next) {
			return nil
		}
		return s.write(ctx, owner, cm, next)
	})
	return left, err
}

// Releases returns what owner released and who takes each object over.
func (s *Store) Releases(ctx context.Context, owner Owner) ([]Released, error) {
	s.rel.mu.Lock()
	defer s.rel.mu.Unlock()
	_, entries, err := s.record(ctx, owner.UID)
	return entries, err
}

func sortedReleased(byKey map[ID]Released) []Released {
	out := make([]Released, 0, len(byKey))
	for _, e := range byKey {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return less(out[i].ID, out[j].ID) })
	return out
}

func sameReleased(a, b []Released) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
