package bundledeployment

import (
	"context"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/approval"
	"github.com/rukpak/rukpak/internal/clusterinfo"
	"github.com/rukpak/rukpak/internal/content"
	"github.com/rukpak/rukpak/internal/controller/bundledeployment/schedule"
	"github.com/rukpak/rukpak/internal/health"
	"github.com/rukpak/rukpak/internal/identity"
	"github.com/rukpak/rukpak/internal/inventory"
	"github.com/rukpak/rukpak/internal/objectwatch"
	"github.com/rukpak/rukpak/internal/permissions"
	"github.com/rukpak/rukpak/internal/renderstore"
	"github.com/rukpak/rukpak/internal/shard"
	"github.com/rukpak/rukpak/internal/source"
	"github.com/rukpak/rukpak/internal/tenant"
	"github.com/rukpak/rukpak/pkg/provisioner"
)

// Options are what a Reconciler is made of (New).
type Options struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// Provisioners are the classes served.
	Provisioners provisioner.Set
	// Sources resolve and unpack sources.
	Sources source.Registry
	// Unpacker puts revisions' content into the store.
	Unpacker *content.Unpacker
	// Engine applies and prunes objects.
	Engine *apply.Engine
	// Inventory records which objects each BundleDeployment manages.
	Inventory *inventory.Store
	// Identities hands out clients acting as each install identity.
	Identities *identity.Pool
	// ManagerIdentity lets BundleDeployments without spec.serviceAccount
	// install as the manager itself (the cluster-admin mode); without it
	// they are refused with ServiceAccountRequired.
	ManagerIdentity bool
	// SeparateApprover refuses approvals of held revisions given by their
	// requester (see gate).
	SeparateApprover bool
	// Approval, when set, re-checks that the user who last changed a
	// BundleDeployment's spec may impersonate its identity and use its
	// class.
	Approval *approval.Checker
	// Self is who the manager is (its SelfSubjectReview). The Bundles it
	// creates carry it in their requested-by annotations, as the
	// MutatingAdmissionPolicy rukpak-requested-by would record it: the
	// policies of config/policy skip the release manager's own Bundle
	// writes, which need none of their checks. Empty leaves the
	// annotations to the policy.
	Self authenticationv1.UserInfo
	// ApprovalTTL is how long an allowed requester is trusted before a
	// reconcile checks again; 0 means defaultApprovalTTL.
	ApprovalTTL time.Duration
	// Permissions, when set, checks a ServiceAccount's permissions before
	// a revision is applied as it.
	Permissions *permissions.Checker
	// APIReader reads, uncached, what the manager does not watch: whether
	// a BundleDeployment's ServiceAccount still exists before its objects
	// are deleted as it. nil skips that check (the deletion is then
	// refused by the API server instead).
	APIReader client.Reader
	// Recorder emits events.
	Recorder events.EventRecorder
	// Cluster tells formats that need it (Helm) what the cluster serves;
	// nil renders with the formats' defaults.
	Cluster *clusterinfo.Reader
	// KindCaches are the manager's caches of what the cluster serves (its
	// RESTMapper, Cluster): each forgets what it knows whenever a
	// CustomResourceDefinition or APIService is created, changed or
	// deleted (servedKindsChanged), before the BundleDeployments waiting
	// for a kind are queued.
	KindCaches []Invalidator
	// TenantReconciles is how many BundleDeployments of one tenant (see
	// tenant.Of) are reconciled at once; DefaultTenantReconciles when 0.
	TenantReconciles int
	// HookWaits is how many BundleDeployments wait for hooks without a
	// reconcile worker at once (see schedule.Detach); DefaultHookWaits
	// when 0.
	HookWaits int
	// TenantHookWaits is how many of one tenant do;
	// DefaultTenantHookWaits when 0.
	TenantHookWaits int
	// ContentURL is the content server's external base URL, for the
	// status.contentURL of the Bundles this controller reports; "" when
	// there is no content server.
	ContentURL string
	// ServingCerts issues the serving certificates formats ask for; nil
	// uses the default lifetimes.
	ServingCerts *ServingCerts
	// Renders stores the render of each revision of a provisioner that
	// renders once (Helm); nil renders every revision every time.
	Renders *renderstore.Store
	// ReviewConcurrency is how many revisions are reviewed at once;
	// DefaultReviewConcurrency when 0.
	ReviewConcurrency int
	// TenantReviewConcurrency is how many of one tenant are;
	// DefaultTenantReviewConcurrency when 0.
	TenantReviewConcurrency int
	// Adopter, when set, prepares a BundleDeployment relabelled to this
	// manager's shard before it is reconciled (see shard.go).
	Adopter *shard.Adopter
	// Workers is how many reconciles run at once: the controller's
	// MaxConcurrentReconciles (the scheduler shares them among tenants).
	Workers int
}

// Reconciler reconciles BundleDeployments of the classes its provisioners
// serve. New makes one; SetupWithManager registers its watches.
type Reconciler struct {
	Options

	// The steps' dependencies, behind the small interfaces the steps
	// declare (New wires them; unit tests set fakes).

	// inv is the inventory as applying a revision uses it (Inventory).
	inv revisionInventory
	// kinds tells which kinds the cluster serves (Engine).
	kinds kindServer
	// renderer renders revisions (render: the content store, the
	// class's format, the stored renders).
	renderer revisionRenderer
	// pipeline makes rendered objects an apply plan (package planner
	// over Engine).
	pipeline planPipeline
	// reviewer reviews a new revision (package review).
	reviewer reviewer
	// healthReader reads the active revision's objects for its health
	// check (readForHealth).
	healthReader healthReader
	// watched is what the drift watches show of managed objects
	// (watches, once the controller has started).
	watched watchedObjects

	// watches are the drift watches of managed objects, started with the
	// controller (SetupWithManager).
	watches *objectwatch.Watcher
	// mem is what this process knows beyond the API server (see memory).
	mem *memory
	// wake enqueues BundleDeployments handed an object.
	wake chan event.GenericEvent
	// healthCache caches compiled health probes.
	healthCache *health.Cache
	// reviews bound the reviews running at once (reviewSlots).
	reviews     *tenant.Slots
	reviewsOnce sync.Once
	// sched runs the reconciles: each tenant's share of the workers,
	// hook waits without a worker, superseded reconciles, the echoes of
	// their writes and the status they wrote (package schedule). Its
	// queue is the controller's work queue (drift events go there).
	sched *schedule.Scheduler
}

// New makes a Reconciler of opts: the one place the steps' dependencies
// are wired to what opts names, and the Reconciler's own state (its
// memory, the health probe cache, the scheduler) is made.
func New(opts Options) *Reconciler {
	r := &Reconciler{Options: opts}
	if opts.Inventory != nil {
		r.inv = opts.Inventory
	}
	if opts.Engine != nil {
		r.kinds = opts.Engine
		r.pipeline = enginePipeline{preparer: opts.Engine}
	}
	r.renderer = formatRenderer{r: r}
	r.reviewer = packageReviewer{}
	r.healthReader = liveHealthReader{}
	r.watched = startedWatches{r: r}
	r.mem = newMemory()
	r.healthCache = health.NewCache(1024)
	r.wake = make(chan event.GenericEvent, 1024)
	r.sched = schedule.New(schedule.Options{
		Workers:         opts.Workers,
		TenantWorkers:   opts.TenantReconciles,
		HookWaits:       opts.HookWaits,
		TenantHookWaits: opts.TenantHookWaits,
		Unchanged:       r.isUnchanged,
		Applied:         r.isApplied,
	})
	return r
}

// startedWatches are the drift watches, once the controller started them
// (SetupWithManager); before, they show nothing and watch nothing.
type startedWatches struct{ r *Reconciler }

var _ watchedObjects = startedWatches{}

// Get implements watchedObjects.
func (w startedWatches) Get(key objectwatch.Key, namespace, name string) (*metav1.PartialObjectMetadata, bool) {
	if w.r.watches == nil {
		return nil, false
	}
	return w.r.watches.Get(key, namespace, name)
}

// Ensure implements watchedObjects; before the watches are started there
// is nothing to watch with.
func (w startedWatches) Ensure(owner string, keys []objectwatch.Key) error {
	if w.r.watches == nil {
		return nil
	}
	return w.r.watches.Ensure(owner, keys)
}

// Await implements watchedObjects; before the watches are started there
// is nothing to wait for.
func (w startedWatches) Await(ctx context.Context, owner string, keys []objectwatch.Key) error {
	if w.r.watches == nil {
		return nil
	}
	return w.r.watches.Await(ctx, owner, keys)
}
