package bundledeployment

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/identity"
	"github.com/rukpak/rukpak/internal/inventory"
)

// memory is what this process knows of the BundleDeployments it
// reconciles beyond what the API server says. It has one owner, the
// Reconciler, and one lock: reconciles of different BundleDeployments run
// at once, and drift events read it from the watch goroutines, so every
// access goes through its methods.
//
// What it holds, and its lifetime:
//
//   - per BundleDeployment, one remembered record (below), made by the
//     first reconcile that records anything and dropped by forget when the
//     BundleDeployment is gone (or replaced by one of another UID);
//   - claims: objects a BundleDeployment was refused because another one
//     holds them (claimHeld), dropped when the holder hands them over
//     (release) or the claimant is deleted (dropClaims);
//   - retries: the workqueue rate limiter counting retries of a revision
//     that failed for a reason the world can fix, forgotten on an install,
//     a new revision or forget.
//
// None of it survives a restart, and none of it has to: the API server
// says enough to rebuild it, at the cost of reads. What was applied is
// rebuilt from the inventory's records (applied.go), a failed revision
// from status.failedBundle (heldBack), the identity and the requester's
// approval by the first reconcile (act, authorize), revision numbers from
// the Bundles' labels (nextRevisionNumber), health verdicts by the first
// health check, a held revision's review by rendering it again (gate),
// and claims by the claimant's next refused apply (it looks again every
// handOffRecheck). The status this process last wrote is needed only
// until the cache shows it (ownstatus.go).
type memory struct {
	mu sync.Mutex
	// bds are the records of the BundleDeployments, by name.
	bds map[string]*remembered
	// claims are objects (by inventory.ID.Key) that a BundleDeployment was
	// refused because another one manages them: the claimant's name.
	claims map[inventory.ID]string
	// retries count the retries of each BundleDeployment's revision
	// (retryKey) that failed for a reason the world can fix (see
	// failure.PolicyOf).
	retries workqueue.TypedRateLimiter[retryKey]
}

// remembered is what this process knows of one BundleDeployment.
type remembered struct {
	// applied is what was last applied.
	applied *appliedState
	// failed is the failed revision this process recorded (see
	// Reconciler.heldBack).
	failed *failedRevision
	// retrying is the revision being retried (see memory.retries).
	retrying string
	// approval is the requester last found allowed.
	approval *approvedRequester
	// identity is the install identity in use, when hasIdentity.
	identity    identity.Identity
	hasIdentity bool
	// verdicts are the last health check's verdicts.
	verdicts *healthMemo
	// number is the revision number last handed out: a Bundle just
	// created may not be in the cache yet when the next revision is
	// numbered.
	number int
	// own is the status this process wrote that the cache has not shown
	// yet (see ownStatus).
	own *ownStatus
	// review is the last review of a held revision: a held revision is
	// not rendered and reviewed again on every reconcile while it and the
	// active revision stay the same.
	review *reviewMemo
}

// reviewMemo is the review of revision against active.
type reviewMemo struct {
	revision, active string
	review           *v1alpha2.RevisionReview
}

func newMemory() *memory {
	return &memory{
		bds:     map[string]*remembered{},
		claims:  map[inventory.ID]string{},
		retries: workqueue.NewTypedItemExponentialFailureRateLimiter[retryKey](retryBase, retryMax),
	}
}

// of returns name's record, nil when there is none; the caller holds mu.
func (m *memory) of(name string) *remembered { return m.bds[name] }

// record returns name's record, made if there is none; the caller holds
// mu.
func (m *memory) record(name string) *remembered {
	r := m.bds[name]
	if r == nil {
		r = &remembered{}
		m.bds[name] = r
	}
	return r
}

// review returns the review remembered for revision against active.
func (m *memory) review(name, revision, active string) *v1alpha2.RevisionReview {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.of(name); r != nil && r.review != nil && r.review.revision == revision && r.review.active == active {
		return r.review.review
	}
	return nil
}

// setReview remembers the review of a held revision; nil forgets it.
func (m *memory) setReview(name, revision, active string, rev *v1alpha2.RevisionReview) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rev == nil {
		if r := m.of(name); r != nil {
			r.review = nil
		}
		return
	}
	m.record(name).review = &reviewMemo{revision: revision, active: active, review: rev}
}

// appliedState returns what was last applied for name, or nil.
func (m *memory) appliedState(name string) *appliedState {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.of(name); r != nil {
		return r.applied
	}
	return nil
}

// setApplied records st as what was last applied for name.
func (m *memory) setApplied(name string, st *appliedState) {
	m.mu.Lock()
	m.record(name).applied = st
	m.mu.Unlock()
}

// object returns what st says was applied of id.
func (m *memory) object(st *appliedState, id inventory.ID) appliedObject {
	m.mu.Lock()
	defer m.mu.Unlock()
	return st.objects[id]
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

// appliedObject returns what BundleDeployment owner last applied of id.
func (m *memory) appliedObject(owner string, id inventory.ID) (appliedObject, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.of(owner)
	if r == nil || r.applied == nil {
		return appliedObject{}, false
	}
	a, ok := r.applied.objects[id]
	return a, ok
}

// otherUID reports whether what is known of name is of a
// BundleDeployment with another UID than uid.
func (m *memory) otherUID(name string, uid types.UID) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.of(name)
	return r != nil && r.applied != nil && r.applied.uid != uid
}

// forget drops everything known of name (not its claims, see
// dropClaims) and returns the identity it used when no other
// BundleDeployment uses it (its clients can go).
func (m *memory) forget(name string) (unused identity.Identity, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.of(name)
	if r == nil {
		return identity.Identity{}, false
	}
	m.forgetRetries(name)
	delete(m.bds, name)
	return r.identity, r.hasIdentity && !m.identityInUse(r.identity)
}

// revisionNumber returns the revision number last handed out for name, 0
// for none.
func (m *memory) revisionNumber(name string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.of(name); r != nil {
		return r.number
	}
	return 0
}

// setRevisionNumber records n as the revision number last handed out for
// name.
func (m *memory) setRevisionNumber(name string, n int) {
	m.mu.Lock()
	m.record(name).number = n
	m.mu.Unlock()
}

// ownStatus returns the status this process last wrote to name, while the
// cache has not shown it.
func (m *memory) ownStatus(name string) (ownStatus, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.of(name); r != nil && r.own != nil {
		return *r.own, true
	}
	return ownStatus{}, false
}

// setOwnStatus records o as the status this process last wrote to name.
func (m *memory) setOwnStatus(name string, o ownStatus) {
	m.mu.Lock()
	m.record(name).own = &o
	m.mu.Unlock()
}

// dropOwnStatus forgets the status written to name when the write that
// made version rv was the last: the cache shows rv (or a later version).
func (m *memory) dropOwnStatus(name, rv string) {
	m.mu.Lock()
	if r := m.of(name); r != nil && r.own != nil && r.own.rv == rv {
		r.own = nil
	}
	m.mu.Unlock()
}

// failedRevision returns the failed revision recorded for name.
func (m *memory) failedRevision(name string) (failedRevision, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.of(name); r != nil && r.failed != nil {
		return *r.failed, true
	}
	return failedRevision{}, false
}

// setFailed records f as name's failed revision.
func (m *memory) setFailed(name string, f failedRevision) {
	m.mu.Lock()
	m.record(name).failed = &f
	m.mu.Unlock()
}

// clearFailed forgets name's failed revision and its retries.
func (m *memory) clearFailed(name string) {
	m.mu.Lock()
	if r := m.of(name); r != nil {
		r.failed = nil
	}
	m.forgetRetries(name)
	m.mu.Unlock()
}

// nextRetry counts one more retry of name's revision and returns when to
// try again: retryBase, doubled at every retry up to retryMax. A new
// revision starts from the first.
func (m *memory) nextRetry(name, revision string) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.record(name)
	if r.retrying != "" && r.retrying != revision {
		m.retries.Forget(retryKey{name: name, revision: r.retrying})
	}
	r.retrying = revision
	return m.retries.When(retryKey{name: name, revision: revision})
}

// resetRetries forgets the retries of name (installed, or gone).
func (m *memory) resetRetries(name string) {
	m.mu.Lock()
	m.forgetRetries(name)
	m.mu.Unlock()
}

// forgetRetries forgets the retries of name; the caller holds mu.
func (m *memory) forgetRetries(name string) {
	if r := m.of(name); r != nil && r.retrying != "" {
		m.retries.Forget(retryKey{name: name, revision: r.retrying})
		r.retrying = ""
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

// release drops the claims of others than owner on the objects owner kept
// for them (cs), and returns the claimants to wake.
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

// approval returns the requester of name last found allowed.
func (m *memory) approval(name string) (approvedRequester, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.of(name); r != nil && r.approval != nil {
		return *r.approval, true
	}
	return approvedRequester{}, false
}

// setApproval records a as name's requester found allowed.
func (m *memory) setApproval(name string, a approvedRequester) {
	m.mu.Lock()
	m.record(name).approval = &a
	m.mu.Unlock()
}

// useIdentity records that name installs as id and returns the identity
// it used before when no BundleDeployment uses that one any more.
func (m *memory) useIdentity(name string, id identity.Identity) (unused identity.Identity, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.record(name)
	prev, had := r.identity, r.hasIdentity
	r.identity, r.hasIdentity = id, true
	return prev, had && prev != id && !m.identityInUse(prev)
}

// identityInUse reports whether a BundleDeployment installs as id; the
// caller holds mu.
func (m *memory) identityInUse(id identity.Identity) bool {
	for _, r := range m.bds {
		if r.hasIdentity && r.identity == id {
			return true
		}
	}
	return false
}
