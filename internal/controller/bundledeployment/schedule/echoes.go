package schedule

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// echoes defers the events of managed objects that arrive while their
// BundleDeployment's turn runs, and judges them when it ends. The events
// of a reconcile's own writes arrive while it is still applying, before
// it records what it applied: judged at once, each would look like drift
// and queue a second reconcile that finds nothing to do (for a new
// install, one in two). Judged once the reconcile has recorded its writes,
// they are the echoes they are; what someone else changed meanwhile still
// queues the BundleDeployment.
type echoes struct {
	mu sync.Mutex
	// deferred are the events of each BundleDeployment whose turn runs,
	// the last one of each object.
	deferred map[string]map[deferredKey]deferredEvent
	// running counts the turns of each that run (one, but for a detached
	// one ending while the next begins).
	running map[string]int
}

type deferredKey struct {
	kind      schema.GroupVersionKind
	namespace string
	name      string
}

type deferredEvent struct {
	obj     *metav1.PartialObjectMetadata
	deleted bool
}

func newEchoes() *echoes {
	return &echoes{deferred: map[string]map[deferredKey]deferredEvent{}, running: map[string]int{}}
}

// begin starts deferring the events of name's objects: its turn runs.
func (e *echoes) begin(name string) {
	e.mu.Lock()
	e.running[name]++
	if e.deferred[name] == nil {
		e.deferred[name] = map[deferredKey]deferredEvent{}
	}
	e.mu.Unlock()
}

// deferEvent defers the event of a managed object of name and reports true when
// name's turn runs; false when it does not (the event is judged now).
func (e *echoes) deferEvent(name string, kind schema.GroupVersionKind, obj *metav1.PartialObjectMetadata, deleted bool) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	h, ok := e.deferred[name]
	if !ok {
		return false
	}
	h[deferredKey{kind: kind, namespace: obj.GetNamespace(), name: obj.GetName()}] = deferredEvent{obj: obj, deleted: deleted}
	return true
}

// end returns the events deferred for name; once no turn of name runs,
// it stops deferring them.
func (e *echoes) end(name string) map[deferredKey]deferredEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	h := e.deferred[name]
	if e.running[name]--; e.running[name] <= 0 {
		delete(e.running, name)
		delete(e.deferred, name)
	} else {
		e.deferred[name] = map[deferredKey]deferredEvent{}
	}
	return h
}

// ObjectEvent takes an event of a managed object of the BundleDeployment
// owner (its kind, its metadata, whether it was deleted). While a turn of
// owner runs, the event is deferred and judged when the turn ends (Turn.End);
// otherwise it is judged now: owner is queued again unless the event
// shows no drift (Options.Unchanged).
func (s *Scheduler) ObjectEvent(owner string, kind schema.GroupVersionKind, obj *metav1.PartialObjectMetadata, deleted bool) {
	if s.echoes.deferEvent(owner, kind, obj, deleted) {
		return
	}
	if deleted || !s.unchanged(kind, obj) {
		s.enqueueDrift(owner, kind, obj)
	}
}

// judgeDeferred stops deferring name's events and queues name again when one of
// them is drift of what its reconcile recorded as applied.
func (s *Scheduler) judgeDeferred(name string) {
	for k, ev := range s.echoes.end(name) {
		if ev.deleted || !s.unchanged(k.kind, ev.obj) {
			s.enqueueDrift(name, k.kind, ev.obj)
			return
		}
	}
}
