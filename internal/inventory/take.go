package inventory

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TakeVerdict is what a release record says of a takeover.
type TakeVerdict int

const (
	// NotReleased: the record does not list the object with that UID
	// (or there is no record): the owner never released it.
	NotReleased TakeVerdict = iota
	// Granted: the object was released and is now taken by the taker;
	// no other BundleDeployment may take it while the taker exists.
	Granted
	// TakenByOther: another BundleDeployment, which exists, took it first.
	TakenByOther
)

// Alive reports whether the BundleDeployment o (by name and UID) exists.
type Alive func(ctx context.Context, o Owner) (bool, error)

// takeRequest is one Take waiting for its record to be written.
type takeRequest struct {
	from, taker Owner
	id          ID
	uid         types.UID
	alive       Alive

	verdict TakeVerdict
	by      Owner
	err     error
	done    chan struct{}
}

// Take asks whether the object id of UID uid, labelled as the
// BundleDeployment from's, was released by it, and takes it for taker
// when it was: the record then names taker, and a later Take by another
// BundleDeployment is TakenByOther (naming taker) while alive says taker
// exists. Asking again as the same taker is Granted again. Takes of one
// record made at the same time are written together.
func (s *Store) Take(ctx context.Context, from Owner, id ID, uid types.UID, taker Owner, alive Alive) (TakeVerdict, Owner, error) {
	if from.UID == "" || uid == "" || taker.UID == "" {
		return NotReleased, Owner{}, nil
	}
	req := &takeRequest{from: from, taker: taker, id: id, uid: uid, alive: alive, done: make(chan struct{})}
	s.rel.pmu.Lock()
	s.rel.pending = append(s.rel.pending, req)
	s.rel.pmu.Unlock()

	s.rel.mu.Lock()
	s.rel.pmu.Lock()
	batch := s.rel.pending
	s.rel.pending = nil
	s.rel.pmu.Unlock()
	s.takeAll(ctx, batch)
	s.rel.mu.Unlock()

	<-req.done // answered by this call or by the one that held mu before
	return req.verdict, req.by, req.err
}

// takeAll answers batch, writing each record it changes once. The caller
// holds rel.mu.
func (s *Store) takeAll(ctx context.Context, batch []*takeRequest) {
	byRecord := map[types.UID][]*takeRequest{}
	var order []types.UID
	for _, r := range batch {
		if _, ok := byRecord[r.from.UID]; !ok {
			order = append(order, r.from.UID)
		}
		byRecord[r.from.UID] = append(byRecord[r.from.UID], r)
	}
	for _, uid := range order {
		reqs := byRecord[uid]
		err := retry.RetryOnConflict(retry.DefaultBackoff, func() error { return s.takeFrom(ctx, reqs) })
		for _, r := range reqs {
			if err != nil {
				r.verdict, r.by, r.err = NotReleased, Owner{}, err
			}
			close(r.done)
		}
	}
}

// takeFrom decides reqs, all of one record, and writes the record when a
// taker is new.
func (s *Store) takeFrom(ctx context.Context, reqs []*takeRequest) error {
	from := reqs[0].from
	cm, entries, err := s.record(ctx, from.UID)
	if err != nil {
		return err
	}
	changed := false
	for _, r := range reqs {
		r.verdict, r.by, r.err = NotReleased, Owner{}, nil
		i, verdict, by, err := decide(ctx, cm, entries, r)
		if err != nil {
			return err
		}
		r.verdict, r.by = verdict, by
		if verdict == Granted && entries[i].TakenBy != r.taker {
			entries[i].TakenBy = r.taker
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return s.write(ctx, Owner{Name: cm.Labels[labelReleasedBy], UID: from.UID}, cm, entries)
}

// decide says what the record cm (with entries) makes of r, and at which
// entry.
func decide(ctx context.Context, cm *corev1.ConfigMap, entries []Released, r *takeRequest) (int, TakeVerdict, Owner, error) {
	if cm == nil || cm.Labels[labelReleasedBy] != r.from.Name {
		return -1, NotReleased, Owner{}, nil
	}
	i := indexReleased(entries, r.id)
	if i < 0 || entries[i].UID != r.uid {
		return -1, NotReleased, Owner{}, nil
	}
	holder := entries[i].TakenBy
	if holder.UID != "" && holder.UID != r.taker.UID {
		ok, err := r.alive(ctx, holder)
		if err != nil {
			return -1, NotReleased, Owner{}, fmt.Errorf("checking BundleDeployment %s, which takes over %s: %w", holder, r.id, err)
		}
		if ok {
			return i, TakenByOther, holder, nil
		}
		// It was deleted without letting go (its finalizer removed by
		// hand): the object still carries the releaser's labels, so it
		// never took it.
	}
	return i, Granted, Owner{}, nil
}

// Peek is Take without taking: what Take would answer now.
func (s *Store) Peek(ctx context.Context, from Owner, id ID, uid types.UID, taker Owner, alive Alive) (TakeVerdict, Owner, error) {
	if from.UID == "" || uid == "" || taker.UID == "" {
		return NotReleased, Owner{}, nil
	}
	s.rel.mu.Lock()
	defer s.rel.mu.Unlock()
	cm, entries, err := s.record(ctx, from.UID)
	if err != nil {
		return NotReleased, Owner{}, err
	}
	_, verdict, by, err := decide(ctx, cm, entries, &takeRequest{from: from, taker: taker, id: id, uid: uid, alive: alive})
	return verdict, by, err
}

func indexReleased(entries []Released, id ID) int {
	key := id.Key()
	for i := range entries {
		if entries[i].ID.Key() == key {
			return i
		}
	}
	return -1
}

// Settle lets go of what taker took from other BundleDeployments' release
// records, when taker is deleted: an entry whose object drop says taker
// took (it carries taker's labels, so taker's own deletion deleted it or
// released it in its turn) is removed; any other (taker never wrote the
// object) is released again for anyone. Records left empty are deleted.
func (s *Store) Settle(ctx context.Context, taker Owner, drop func(ID) bool) error {
	if taker.UID == "" {
		return nil
	}
	list := &corev1.ConfigMapList{}
	if err := s.live.List(ctx, list, client.InNamespace(s.namespace), client.HasLabels{labelTakenByPrefix + string(taker.UID)}); err != nil {
		return fmt.Errorf("listing the release records %s takes objects of: %w", taker, err)
	}
	s.rel.mu.Lock()
	defer s.rel.mu.Unlock()
	for i := range list.Items {
		from := types.UID(list.Items[i].Labels[labelReleasedUID])
		err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
			cm, entries, err := s.record(ctx, from)
			if err != nil || cm == nil {
				return err
			}
			var next []Released
			for _, e := range entries {
				if e.TakenBy.UID == taker.UID {
					if drop(e.ID) {
						continue
					}
					e.TakenBy = Owner{}
				}
				next = append(next, e)
			}
			return s.write(ctx, Owner{Name: cm.Labels[labelReleasedBy], UID: from}, cm, next)
		})
		if err != nil {
			return err
		}
	}
	return nil
}
