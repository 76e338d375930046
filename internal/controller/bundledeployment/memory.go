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
// reconciles beyond what the API server says: what it applied, objects
// other BundleDeployments wait for, revisions that failed, retries,
// requesters found allowed and the identities in use. Reconciles of
// different BundleDeployments run at once, and drift events read it from
// the watch goroutines, so every access goes through its methods, under
// its one lock. All of it can be lost (a restart): the API server (status,
// inventories with their records) says enough to rebuild it, at the cost
// of reads.
type memory struct {
	mu sync.Mutex
	// applied is what was last applied, by BundleDeployment name.
	applied map[string]*appliedState
	// claims are objects (by inventory.ID.Key) that a BundleDeployment was
	// refused because another one manages them: the claimant's name.
	claims map[inventory.ID]string
	// failed are the failed revisions this process recorded, by
	// BundleDeployment (see Reconciler.heldBack).
	failed map[string]failedRevision
	// retrying is the revision each BundleDeployment retries after a
	// failure the world can fix (see failure.PolicyOf), and retries the
	// workqueue rate limiter that counts those retries, by
	// BundleDeployment and revision (retryKey).
	retrying map[string]string
	retries  workqueue.TypedRateLimiter[retryKey]
	// approvals are requesters found allowed, by BundleDeployment.
	approvals map[string]approvedRequester
	// identities are the install identities in use, by BundleDeployment.
	identities map[string]identity.Identity
	// verdicts are the last health check's verdicts, by BundleDeployment.
	verdicts map[string]healthMemo
	// numbers are the revision numbers this process last handed out, by
	// BundleDeployment: a Bundle just created may not be in the cache yet
	// when the next revision is numbered.
	numbers map[string]int
	// own are the statuses this process wrote that the cache has not shown
	// yet, by BundleDeployment (see ownStatus).
	own map[string]ownStatus
	// reviews are the last review of a held revision, by BundleDeployment:
	// a held revision is not rendered and reviewed again on every
	// reconcile while it and the active revision stay the same.
	reviews map[string]reviewMemo
}

// reviewMemo is the review of revision against active.
type reviewMemo struct {
	revision, active string
	review           *v1alpha2.RevisionReview
}

// review returns the review remembered for revision against active.
func (m *memory) review(name, revision, active string) *v1alpha2.RevisionReview {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.reviews[name]; ok && r.revision == revision && r.active == active {
		return r.review
	}
	return nil
}

// setReview remembers the review of a held revision; nil forgets it.
func (m *memory) setReview(name, revision, active string, rev *v1alpha2.RevisionReview) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rev == nil {
		delete(m.reviews, name)
		return
	}
	m.reviews[name] = reviewMemo{revision: revision, active: active, review: rev}
}

func newMemory() *memory {
	return &memory{
		applied:    map[string]*appliedState{},
		reviews:    map[string]reviewMemo{},
		claims:     map[inventory.ID]string{},
		failed:     map[string]failedRevision{},
		retrying:   map[string]string{},
		retries:    workqueue.NewTypedItemExponentialFailureRateLimiter[retryKey](retryBase, retryMax),
		approvals:  map[string]approvedRequester{},
		identities: map[string]identity.Identity{},
		verdicts:   map[string]healthMemo{},
		numbers:    map[string]int{},
		own:        map[string]ownStatus{},
	}
}

// appliedState returns what was last applied for name, or nil.
func (m *memory) appliedState(name string) *appliedState {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.applied[name]
}

// setApplied records st as what was last applied for name.
func (m *memory) setApplied(name string, st *appliedState) {
	m.mu.Lock()
	m.applied[name] = st
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
	st := m.applied[owner]
	if st == nil {
		return appliedObject{}, false
	}
	a, ok := st.objects[id]
	return a, ok
}

// otherUID reports whether what is known of name is of a
// BundleDeployment with another UID than uid.
func (m *memory) otherUID(name string, uid types.UID) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.applied[name]
	return st != nil && st.uid != uid
}

// forget drops everything known of name (not its claims, see
// dropClaims) and returns the identity it used when no other
// BundleDeployment uses it (its clients can go).
func (m *memory) forget(name string) (unused identity.Identity, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.applied, name)
	delete(m.failed, name)
	m.forgetRetries(name)
	delete(m.approvals, name)
	delete(m.verdicts, name)
	delete(m.numbers, name)
	delete(m.own, name)
	delete(m.reviews, name)
	id, had := m.identities[name]
	delete(m.identities, name)
	return id, had && !m.identityInUse(id)
}

// revisionNumber returns the revision number last handed out for name, 0
// for none.
func (m *memory) revisionNumber(name string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.numbers[name]
}

// setRevisionNumber records n as the revision number last handed out for
// name.
func (m *memory) setRevisionNumber(name string, n int) {
	m.mu.Lock()
	m.numbers[name] = n
	m.mu.Unlock()
}

// ownStatus returns the status this process last wrote to name, while the
// cache has not shown it.
func (m *memory) ownStatus(name string) (ownStatus, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.own[name]
	return o, ok
}

// setOwnStatus records o as the status this process last wrote to name.
func (m *memory) setOwnStatus(name string, o ownStatus) {
	m.mu.Lock()
	m.own[name] = o
	m.mu.Unlock()
}

// dropOwnStatus forgets the status written to name when the write that
// made version rv was the last: the cache shows rv (or a later version).
func (m *memory) dropOwnStatus(name, rv string) {
	m.mu.Lock()
	if o, ok := m.own[name]; ok && o.rv == rv {
		delete(m.own, name)
	}
	m.mu.Unlock()
}

// failedRevision returns the failed revision recorded for name.
func (m *memory) failedRevision(name string) (failedRevision, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.failed[name]
	return f, ok
}

// setFailed records f as name's failed revision.
func (m *memory) setFailed(name string, f failedRevision) {
	m.mu.Lock()
	m.failed[name] = f
	m.mu.Unlock()
}

// clearFailed forgets name's failed revision and its retries.
func (m *memory) clearFailed(name string) {
	m.mu.Lock()
	delete(m.failed, name)
	m.forgetRetries(name)
	m.mu.Unlock()
}

// nextRetry counts one more retry of name's revision and returns when to
// try again: retryBase, doubled at every retry up to retryMax. A new
// revision starts from the first.
func (m *memory) nextRetry(name, revision string) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	if prev, ok := m.retrying[name]; ok && prev != revision {
		m.retries.Forget(retryKey{name: name, revision: prev})
	}
	m.retrying[name] = revision
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
	if rev, ok := m.retrying[name]; ok {
		m.retries.Forget(retryKey{name: name, revision: rev})
		delete(m.retrying, name)
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
	a, ok := m.approvals[name]
	return a, ok
}

// setApproval records a as name's requester found allowed.
func (m *memory) setApproval(name string, a approvedRequester) {
	m.mu.Lock()
	m.approvals[name] = a
	m.mu.Unlock()
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
// caller holds mu.
func (m *memory) identityInUse(id identity.Identity) bool {
	for _, other := range m.identities {
		if other == id {
			return true
		}
	}
	return false
}
