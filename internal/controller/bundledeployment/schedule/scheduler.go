package schedule

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/tenant"
)

// Options bound a Scheduler and tell it what it cannot know itself.
type Options struct {
	// Workers is the controller's MaxConcurrentReconciles: the workers
	// shared by all tenants (at least TenantWorkers).
	Workers int
	// TenantWorkers is how many reconciles of one tenant run at once;
	// DefaultTenantReconciles when less than 1.
	TenantWorkers int
	// HookWaits is how many reconciles wait for hooks without a worker at
	// once, in all; DefaultHookWaits when less than 1.
	HookWaits int
	// TenantHookWaits is how many of one tenant do;
	// DefaultTenantHookWaits when less than 1.
	TenantHookWaits int
	// Unchanged reports whether an event of a managed object (its kind
	// and metadata) shows no drift: the echo of the controller's own
	// write, or a change only to what others own. Required.
	Unchanged func(kind schema.GroupVersionKind, obj client.Object) bool
	// Applied reports whether the owner an event's object names applied it
	// (or may have): only then is its drift queued at DriftPriority; an
	// object it never applied, whoever labelled it, queues it at the
	// default priority. Nil: every object counts as applied.
	Applied func(kind schema.GroupVersionKind, obj client.Object) bool
}

// Scheduler runs the reconciles of BundleDeployments (see the package
// documentation). It is safe for concurrent use.
type Scheduler struct {
	// queue is the controller's work queue, set once before its workers
	// start (SetQueue).
	queue     workqueue.TypedRateLimitingInterface[reconcile.Request]
	unchanged func(schema.GroupVersionKind, client.Object) bool
	applied   func(schema.GroupVersionKind, client.Object) bool

	// workers bound each tenant's reconciles at once.
	workers *tenant.Slots
	// parked are BundleDeployments waiting for a worker of their tenant.
	parked *parked
	// drifted are the BundleDeployments queued for drift whose turn has
	// not taken a worker yet: parked, they are woken first, and queued
	// again at DriftPriority.
	drifted *names
	// detached are the reconciles that wait for hooks without a worker.
	detached *detached
	// flights are the turns running, cancelled when superseded.
	flights *inFlight
	// echoes defers events of managed objects while their
	// BundleDeployment's turn runs.
	echoes *echoes
	// own is the status this process last wrote to each BundleDeployment.
	own *ownStatuses
}

// New returns a Scheduler bounded by o.
func New(o Options) *Scheduler {
	share := o.TenantWorkers
	if share < 1 {
		share = DefaultTenantReconciles
	}
	return &Scheduler{
		unchanged: o.Unchanged,
		applied:   o.Applied,
		// Only the shares are bounded here: the total is the controller's.
		// A tenant is lent workers beyond its share while a share's worth
		// of them stays free, for a tenant that comes along.
		workers:  tenant.NewSlots(max(share, o.Workers), share).Lend(share),
		parked:   newParked(),
		drifted:  newNames(),
		detached: newDetached(o.HookWaits, o.TenantHookWaits),
		flights:  newInFlight(),
		echoes:   newEchoes(),
		own:      newOwnStatuses(),
	}
}

// SetQueue gives s the controller's work queue, before its workers start:
// s queues BundleDeployments again there (Enqueue), and hands it the
// results of detached reconciles.
func (s *Scheduler) SetQueue(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	s.queue = q
}

// Enqueue queues the BundleDeployment name; nothing when name is empty or
// there is no queue yet.
func (s *Scheduler) Enqueue(name string) {
	if name == "" || s.queue == nil {
		return
	}
	s.queue.Add(request(name))
}

// DriftPriority is the queue priority of a BundleDeployment queued for
// drift of its managed objects: ahead of what is queued at the default
// priority (0: spec changes, upgrades, sources), so that a correction
// does not wait behind a thousand upgrades.
const DriftPriority = 10

// enqueueDrift queues the BundleDeployment name for drift of obj (of
// kind): at DriftPriority, remembered until its turn takes a worker, when
// name applied obj (Options.Applied); else as Enqueue does.
func (s *Scheduler) enqueueDrift(name string, kind schema.GroupVersionKind, obj client.Object) {
	if name == "" || s.queue == nil {
		return
	}
	if s.applied != nil && !s.applied(kind, obj) {
		s.Enqueue(name)
		return
	}
	s.drifted.add(name)
	s.requeue(name)
}

// requeue queues the BundleDeployment name again: at DriftPriority while it
// waits to correct drift and the queue has priorities (controller-runtime's
// priority queue, its default), else as Enqueue does.
func (s *Scheduler) requeue(name string) {
	if s.queue == nil {
		return
	}
	if pq, ok := s.queue.(priorityqueue.PriorityQueue[reconcile.Request]); ok && s.drifted.has(name) {
		pq.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(DriftPriority)}, request(name))
		return
	}
	s.queue.Add(request(name))
}

// Detached reports whether a reconcile of the BundleDeployment name goes on
// detached. Another reconcile of it would race with that one, which queues
// it again when it ends; a spec change or a deletion ends it at once.
func (s *Scheduler) Detached(name string) bool { return s.detached.running(name) }

// Run runs body, the reconcile of bd, as the bounds allow, and returns
// what controller-runtime should get:
//
//   - bd's tenant (tenant.Of) goes into body's context: everything done
//     for bd counts against its tenant's share;
//   - unless bd is being deleted (a deletion must not wait behind its
//     tenant's installs), body takes a worker of bd's tenant; refused, bd
//     is parked and Run returns at once: bd is queued again when a worker
//     is given back;
//   - body runs on a goroutine of its own: when it detaches (Detach), Run
//     gives its worker back and returns at once, and body's result goes to
//     the queue when it ends; a panic of body is its error;
//   - an error made only of write conflicts is a requeue after
//     conflictRetry, not an error.
func (s *Scheduler) Run(ctx context.Context, bd *v1alpha2.BundleDeployment, body func(context.Context, *v1alpha2.BundleDeployment) (ctrl.Result, error)) (ctrl.Result, error) {
	t := tenant.Of(bd)
	ctx = tenant.WithContext(ctx, t)
	worker := func() {}
	if bd.DeletionTimestamp.IsZero() {
		release, ok := s.acquireWorker(ctx, t, bd.Name)
		if !ok {
			// Queued again when a worker is given back (parked).
			return ctrl.Result{}, nil
		}
		worker = release
	}
	res, err := s.runDetachable(ctx, bd.Name, worker, func(ctx context.Context) (ctrl.Result, error) {
		return body(ctx, bd)
	})
	return quietConflicts(ctx, res, err)
}

// Observe takes bd as the cache now shows it (the BundleDeployment
// informer's updates): a turn of bd that began on another generation, or
// before bd was being deleted, is superseded (its context cancelled), and
// the status this process wrote is dropped once the cache shows it.
func (s *Scheduler) Observe(bd *v1alpha2.BundleDeployment) {
	s.flights.supersede(bd)
	s.own.drop(bd.Name, bd.ResourceVersion)
}

// Forget drops what s knows of the BundleDeployment name, gone (or
// replaced by one of another UID).
func (s *Scheduler) Forget(name string) {
	s.own.forget(name)
	s.drifted.drop(name)
}

// names is a set of BundleDeployment names, safe for concurrent use.
type names struct {
	mu sync.Mutex
	in map[string]struct{}
}

func newNames() *names { return &names{in: map[string]struct{}{}} }

func (n *names) add(name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.in[name] = struct{}{}
}

func (n *names) drop(name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.in, name)
}

func (n *names) has(name string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.in[name]
	return ok
}

func request(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: client.ObjectKey{Name: name}}
}
