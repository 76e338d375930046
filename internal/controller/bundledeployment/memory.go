package bundledeployment

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/health"
	"github.com/rukpak/rukpak/internal/identity"
	"github.com/rukpak/rukpak/internal/inventory"
)

// memory is what this process knows of the BundleDeployments it
// reconciles beyond what the API server says. It has one owner, the
// Reconciler, and one lock.
//
// What it remembers, and for how long:
//
//   - per BundleDeployment, one remembered record (below): loaded into the
//     scope when a reconcile starts (load), read and changed there by the
//     steps alone, and saved when the reconcile ends (save), before the
//     events of its own writes are judged (finish). Reconciles of one
//     BundleDeployment never overlap (the workqueue runs one at a time,
//     and a detached one turns the others away), so nothing saved is lost.
//     Made by the first save, dropped by forget when the BundleDeployment
//     is gone (or replaced by one of another UID);
//   - what other goroutines read while reconciles run, each under the
//     lock: the objects a saved record says were applied (drift events
//     and the apply's collision check read them), the install identity
//     each BundleDeployment uses (its clients go when none does), claims
//     (objects a BundleDeployment was refused because another one manages
//     them, recordClaims; dropped when that one hands them over, release,
//     or the claimant is deleted, dropClaims), and the workqueue rate
//     limiter counting the retries of a revision that failed for a reason
//     the world can fix, and which BundleDeployments wait for a kind to be
//     served (waitForKinds; dropped by forget).
//
// None of it survives a restart, and none of it has to: the API server
// says enough to rebuild it, at the cost of reads. What was applied is
// rebuilt from the inventory's records (applied.go), a failed revision
// from status.failedBundle (markedFailed), the identity and the requester's
// approval by the first reconcile (act, authorize), revision numbers from
// the Bundles' labels (nextRevisionNumber), health verdicts by the first
// health check, the review of a revision held for approval by rendering
// it again (gate),
// and claims by the claimant's next refused apply (it looks again every
// handOffRecheck).
//
// What the scheduler remembers — the status this process wrote that the
// cache has not shown yet, among others — is package schedule's.
type memory struct {
	mu sync.Mutex
	// saved are the records of the BundleDeployments, by name, as their
	// last reconcile saved them.
	saved map[string]*remembered
	// identities are the install identities the BundleDeployments use, by
	// name.
	identities map[string]identity.Identity
	// claims are objects (by inventory.ID.Key) that a BundleDeployment was
	// refused because another one manages them: the claimant's name.
	claims map[inventory.ID]string
	// retries count the retries of each BundleDeployment's revision
	// (retryKey) that failed for a reason the world can fix (see
	// failure.PolicyOf).
	retries workqueue.TypedRateLimiter[retryKey]
	// servedKinds counts the changes of CustomResourceDefinitions and
	// APIServices seen (servedKindsChanged): any of them may make a kind
	// served.
	servedKinds uint64
	// waiting are the BundleDeployments, by name, whose last reconcile
	// ended waiting for a kind to be served (UnknownKind), woken by the
	// next change of what the cluster serves (see waitForKinds).
	waiting map[string]bool
}

// remembered is what this process knows of one BundleDeployment, in the
// scope of its reconcile (scope.mem) and between reconciles (memory.saved).
// While a reconcile has it, only that reconcile's steps use it: no lock.
type remembered struct {
	// applied is what was last applied. Its objects are read by drift
	// events once saved: they are read and changed under memory's lock
	// (memory.object, memory.reapplied, memory.records).
	applied *appliedState
	// failed is the failed revision this process recorded (see
	// markedFailed).
	failed *failedRevision
	// retrying is the revision being retried (see memory.retries).
	retrying string
	// approval is the requester last found allowed.
	approval *approvedRequester
	// verdicts are the last health check's verdicts.
	verdicts *healthMemo
	// number is the revision number last handed out: a Bundle just
	// created may not be in the cache yet when the next revision is
	// numbered.
	number int
	// lookedUp is when this process last looked the floating sources up
	// (status.lastResolvedTime is when their pins last changed: a lookup
	// that finds the same pins writes nothing).
	lookedUp time.Time
	// review is the last review of the newest revision: it is reviewed
	// once while it and the active revision stay the same, not on every
	// reconcile (a revision held for approval, a retry of a refused
	// apply).
	review *reviewMemo
}

// reviewMemo is the review of revision against active, or why it cannot
// be reviewed (a review too large: a fact of the revision).
type reviewMemo struct {
	// revision is the revision's spec and content digests (reviewKey),
	// active the Bundle it was compared with, digest its approval digest.
	revision, active, digest string
	review                   *v1alpha2.RevisionReview
	err                      error
}

func newMemory() *memory {
	return &memory{
		saved:      map[string]*remembered{},
		identities: map[string]identity.Identity{},
		claims:     map[inventory.ID]string{},
		retries:    workqueue.NewTypedItemExponentialFailureRateLimiter[retryKey](retryBase, retryMax),
		waiting:    map[string]bool{},
	}
}

// load returns a copy of name's saved record (an empty one when there is
// none), for a reconcile's scope.
func (m *memory) load(name string) *remembered {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.saved[name]; r != nil {
		c := *r
		return &c
	}
	return &remembered{}
}

// save stores rec as name's memory record, when a reconcile ends.
func (m *memory) save(name string, rec *remembered) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if *rec == (remembered{}) {
		delete(m.saved, name)
		return
	}
	c := *rec
	m.saved[name] = &c
}

// reviewOf returns the review and approval digest remembered for the
// revision of key (reviewKey) against active, or the error that it cannot
// be reviewed; none of them when none is remembered.
func (r *remembered) reviewOf(key, active string) (*v1alpha2.RevisionReview, string, error) {
	if r.review != nil && r.review.revision == key && r.review.active == active {
		return r.review.review, r.review.digest, r.review.err
	}
	return nil, "", nil
}

// setReview remembers the review and approval digest of the revision of
// key (reviewKey) against active, or the error that says it is too large
// to review (isTooLarge); another error (a read that failed) is not
// remembered, nor is a nil review without one.
func (r *remembered) setReview(key, active, digest string, rev *v1alpha2.RevisionReview, err error) {
	switch {
	case err != nil && isTooLarge(err):
		r.review = &reviewMemo{revision: key, active: active, digest: digest, err: err}
	case err == nil && rev != nil:
		r.review = &reviewMemo{revision: key, active: active, digest: digest, review: rev}
	}
}

// verdict returns the verdict the last health check, made with checker,
// gave id at resourceVersion rv.
func (r *remembered) verdict(checker *health.Checker, id inventory.ID, rv string) (*health.Unhealthy, bool) {
	if r.verdicts == nil || r.verdicts.checker != checker || rv == "" {
		return nil, false
	}
	v, ok := r.verdicts.byID[id]
	if !ok || v.rv != rv {
		return nil, false
	}
	return v.unhealthy, true
}

// setVerdicts records the verdicts of a health check with checker,
// replacing the last one's.
func (r *remembered) setVerdicts(checker *health.Checker, byID map[inventory.ID]healthVerdict) {
	r.verdicts = &healthMemo{checker: checker, byID: byID}
}

// object returns what st says was applied of id.
func (m *memory) object(st *appliedState, id inventory.ID) appliedObject {
	a, _ := m.lookup(st, id)
	return a
}

// lookup returns what st says was applied of id, and whether it says id
// was applied.
func (m *memory) lookup(st *appliedState, id inventory.ID) (appliedObject, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := st.objects[id]
	return a, ok
}

// reapplied records what a drift correction wrote to st's objects and
// returns the objects it created or changed.
func (m *memory) reapplied(st *appliedState, cs *apply.ChangeSet) []inventory.ID {
	var restored []inventory.ID
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range cs.Entries {
		st.objects[c.ID] = appliedFrom(c)
		if c.Action == apply.Created || c.Action == apply.Configured {
			restored = append(restored, c.ID)
		}
	}
	return restored
}

// records returns the inventory records of what st says was applied.
func (m *memory) records(st *appliedState) map[inventory.ID]inventory.Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return records(st.objects)
}

// appliedObject returns what BundleDeployment owner's saved record says
// was applied of id.
func (m *memory) appliedObject(owner string, id inventory.ID) (appliedObject, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.saved[owner]
	if r == nil || r.applied == nil {
		return appliedObject{}, false
	}
	a, ok := r.applied.objects[id]
	return a, ok
}

// mayHaveApplied reports whether BundleDeployment owner's saved record
// lists id as applied, or owner has no record to tell (none saved yet,
// as after a restart).
func (m *memory) mayHaveApplied(owner string, id inventory.ID) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.saved[owner]
	if r == nil || r.applied == nil {
		return true
	}
	_, ok := r.applied.objects[id]
	return ok
}

// otherUID reports whether what is known of name is of a
// BundleDeployment with another UID than uid.
func (m *memory) otherUID(name string, uid types.UID) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.saved[name]
	return r != nil && r.applied != nil && r.applied.uid != uid
}

// forget drops everything known of name (not its claims, see
// dropClaims) and returns the identity it used when no other
// BundleDeployment uses it (its clients can go).
func (m *memory) forget(name string) (unused identity.Identity, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.saved[name]; r != nil {
		m.forgetRetry(name, r)
	}
	delete(m.saved, name)
	delete(m.waiting, name)
	id, had := m.identities[name]
	delete(m.identities, name)
	return id, had && !m.identityInUse(id)
}

// nextRetry counts one more retry of the revision of name (whose record is
// rec) and returns when to try again: retryBase, doubled at every retry up
// to retryMax. A new revision starts from the first.
func (m *memory) nextRetry(name string, rec *remembered, revision string) time.Duration {
	if rec.retrying != "" && rec.retrying != revision {
		m.retries.Forget(retryKey{name: name, revision: rec.retrying})
	}
	rec.retrying = revision
	return m.retries.When(retryKey{name: name, revision: revision})
}

// forgetRetry forgets the retries of name (whose record is rec): its
// revision installed, became healthy, or it is gone.
func (m *memory) forgetRetry(name string, rec *remembered) {
	if rec.retrying != "" {
		m.retries.Forget(retryKey{name: name, revision: rec.retrying})
		rec.retrying = ""
	}
}

// claim records that claimant waits for id.
func (m *memory) claim(id inventory.ID, claimant string) {
	m.mu.Lock()
	m.claims[id.Key()] = claimant
	m.mu.Unlock()
}

// claimedByOther reports whether a BundleDeployment other than owner waits
// for id.
func (m *memory) claimedByOther(owner string, id inventory.ID) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.claims[id.Key()]
	return ok && c != owner
}

// release drops the claims of others than owner on the objects owner's prune
// left in place for them (cs), and returns the claimants to wake.
func (m *memory) release(cs *apply.ChangeSet, owner string) []string {
	var wake []string
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range cs.Entries {
		if c.Action != apply.Skipped && c.Action != apply.Kept {
			continue
		}
		if claimant, ok := m.claims[c.ID.Key()]; ok && claimant != owner {
			delete(m.claims, c.ID.Key())
			wake = append(wake, claimant)
		}
	}
	return wake
}

// dropClaims forgets the claims of name (it was deleted).
func (m *memory) dropClaims(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, c := range m.claims {
		if c == name {
			delete(m.claims, id)
		}
	}
}

// useIdentity records that name installs as id and returns the identity
// it used before when no BundleDeployment uses that one any more.
func (m *memory) useIdentity(name string, id identity.Identity) (unused identity.Identity, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	prev, had := m.identities[name]
	m.identities[name] = id
	return prev, had && prev != id && !m.identityInUse(prev)
}

// identityInUse reports whether a BundleDeployment installs as id; the
// caller has locked mu.
func (m *memory) identityInUse(id identity.Identity) bool {
	for _, used := range m.identities {
		if used == id {
			return true
		}
	}
	return false
}

// servedKindsSeen returns how many changes of what the cluster serves were
// seen so far: a reconcile starts with it (scope.kindsSeen).
func (m *memory) servedKindsSeen() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.servedKinds
}

// servedKindsChanged records a change of what the cluster serves (a CRD or
// APIService created, changed or deleted) and returns the
// BundleDeployments whose last reconcile ended waiting for a kind.
func (m *memory) servedKindsChanged() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.servedKinds++
	names := make([]string, 0, len(m.waiting))
	for name := range m.waiting {
		names = append(names, name)
	}
	return names
}

// waitForKinds records whether name's reconcile, which started when seen
// changes of what the cluster serves had been seen, ended waiting for a
// kind (waits). It reports whether that reconcile must run again at once:
// it waits, and what the cluster serves changed while it ran, so that the
// change's wake-up (servedKindsChanged) did not find it waiting. Under one
// lock with servedKindsChanged, no change is missed.
func (m *memory) waitForKinds(name string, waits bool, seen uint64) (again bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !waits {
		delete(m.waiting, name)
		return false
	}
	m.waiting[name] = true
	return m.servedKinds != seen
}
