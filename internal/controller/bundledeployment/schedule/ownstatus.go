package schedule

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// ownStatus is the status this process last wrote to a BundleDeployment,
// remembered until the cache shows it: a reconcile that follows its own status
// patch closely (the echo of its own apply queued it again, say) reads the
// object as it was before the patch, and would otherwise compute its
// status against that and patch again — a write of a custom resource that
// changes nothing but costs the API server as much as one that does.
type ownStatus struct {
	uid types.UID
	// base is the resourceVersion the patch was computed against: while
	// the cache still shows it, the cache has not seen the patch.
	base string
	// rv is the resourceVersion the patch made.
	rv     string
	status *v1alpha2.BundleDeploymentStatus
}

// ownStatuses are the statuses this process wrote, by BundleDeployment
// name, that the cache has not shown yet.
type ownStatuses struct {
	mu sync.Mutex
	m  map[string]ownStatus
}

func newOwnStatuses() *ownStatuses { return &ownStatuses{m: map[string]ownStatus{}} }

// get returns the status this process last wrote to name, while the cache
// has not shown it.
func (o *ownStatuses) get(name string) (ownStatus, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	w, ok := o.m[name]
	return w, ok
}

// set records w as the status this process last wrote to name.
func (o *ownStatuses) set(name string, w ownStatus) {
	o.mu.Lock()
	o.m[name] = w
	o.mu.Unlock()
}

// drop forgets the status written to name when the write that made
// version rv was the last: the cache shows rv (or a later version).
func (o *ownStatuses) drop(name, rv string) {
	o.mu.Lock()
	if w, ok := o.m[name]; ok && w.rv == rv {
		delete(o.m, name)
	}
	o.mu.Unlock()
}

// forget forgets the status written to name, whatever its version.
func (o *ownStatuses) forget(name string) {
	o.mu.Lock()
	delete(o.m, name)
	o.mu.Unlock()
}

// CatchUpStatus gives bd, read from the cache, the status this process
// wrote last when the cache has not seen that write yet (it still shows
// the version the write was made against), so that the reconcile does not
// patch the same status again. Any other version — the write itself, or
// one someone made since — is what it is.
func (s *Scheduler) CatchUpStatus(bd *v1alpha2.BundleDeployment) {
	own, ok := s.own.get(bd.Name)
	if !ok {
		return
	}
	if own.uid != bd.UID || own.base != bd.ResourceVersion {
		s.own.drop(bd.Name, own.rv)
		return
	}
	bd.Status = *own.status.DeepCopy()
}

// StatusWritten records the status bd has after this process patched it
// from version base (bd as the patch returned it), for CatchUpStatus.
func (s *Scheduler) StatusWritten(bd *v1alpha2.BundleDeployment, base string) {
	s.own.set(bd.Name, ownStatus{uid: bd.UID, base: base, rv: bd.ResourceVersion, status: bd.Status.DeepCopy()})
}
