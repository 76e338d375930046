package bundledeployment

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/metadata"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	crsource "sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/controller/bundledeployment/schedule"
	"github.com/rukpak/rukpak/internal/identity"
	"github.com/rukpak/rukpak/internal/objectwatch"
	"github.com/rukpak/rukpak/internal/values"
	"github.com/rukpak/rukpak/pkg/provisioner"
)

// +kubebuilder:rbac:groups=core.rukpak.io,resources=bundledeployments,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=core.rukpak.io,resources=bundledeployments/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=core.rukpak.io,resources=bundledeployments/finalizers,verbs=update
// +kubebuilder:rbac:groups=core.rukpak.io,resources=bundles,verbs=get;list;watch;create;delete;deletecollection
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete,namespace=rukpak-system
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch,namespace=rukpak-system
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch;list
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;impersonate
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=rukpak-system
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch
// +kubebuilder:rbac:groups=apiregistration.k8s.io,resources=apiservices,verbs=get;list;watch
//
// That is all the manager needs for its own objects: bundles' objects are
// read and written as each BundleDeployment's ServiceAccount. The
// cluster-admin mode (--default-identity=manager, config/cluster-admin)
// binds cluster-admin on top.

// Bounds of the reconciles at once (package schedule), for
// Reconciler.TenantReconciles, HookWaits and TenantHookWaits.
const (
	// DefaultTenantReconciles is how many reconciles of one tenant run
	// at once by default (schedule.DefaultTenantReconciles).
	DefaultTenantReconciles = schedule.DefaultTenantReconciles
	// DefaultHookWaits is how many BundleDeployments wait for hooks
	// without a worker at once by default (schedule.DefaultHookWaits).
	DefaultHookWaits = schedule.DefaultHookWaits
	// DefaultTenantHookWaits is how many of one tenant do by default
	// (schedule.DefaultTenantHookWaits).
	DefaultTenantHookWaits = schedule.DefaultTenantHookWaits
)

// managedSelector selects the objects rukpak manages.
const managedSelector = v1alpha2.LabelOwnerKind

// SetupWithManager registers the controller, made by New, with mgr: its
// indexes, its watches and the drift watches of managed objects.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if r.sched == nil {
		return errors.New("the BundleDeployment Reconciler must be made by bundledeployment.New")
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha2.BundleDeployment{}, indexConfigMaps, configMapIndex); err != nil {
		return fmt.Errorf("indexing BundleDeployments by ConfigMap: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha2.BundleDeployment{}, indexSecrets, secretIndex); err != nil {
		return fmt.Errorf("indexing BundleDeployments by Secret: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha2.BundleDeployment{}, indexClass, classIndex); err != nil {
		return fmt.Errorf("indexing BundleDeployments by class: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha2.Bundle{}, indexBundles, bundlesIndex); err != nil {
		return fmt.Errorf("indexing Bundles by BundleDeployment: %w", err)
	}
	inf, err := mgr.GetCache().GetInformer(context.Background(), &v1alpha2.BundleDeployment{})
	if err != nil {
		return fmt.Errorf("getting the BundleDeployment informer: %w", err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(_, obj any) {
		if bd, ok := obj.(*v1alpha2.BundleDeployment); ok {
			// Supersedes a reconcile of an older generation; the cache
			// shows this process's own status write now.
			r.sched.Observe(bd)
		}
	}}); err != nil {
		return fmt.Errorf("watching BundleDeployments for superseded reconciles: %w", err)
	}
	_, err = ctrl.NewControllerManagedBy(mgr).
		// Spec changes, and annotation changes (core.rukpak.io/retry).
		For(&v1alpha2.BundleDeployment{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		// Only a deleted Bundle needs this controller: it creates them
		// itself. One planted under a revision's name (with or without a
		// forged ownerReference) going away unblocks the revision.
		Watches(&v1alpha2.Bundle{}, handler.EnqueueRequestsFromMapFunc(bundleDeploymentsForBundle), builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(event.CreateEvent) bool { return false },
			UpdateFunc:  func(event.UpdateEvent) bool { return false },
			GenericFunc: func(event.GenericEvent) bool { return false },
		})).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.bundleDeploymentsForConfigMap)).
		// Helm values read from Secrets (valuesFrom).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.bundleDeploymentsForSecret)).
		// A class created (or changed) after its BundleDeployments.
		Watches(&v1alpha2.ProvisionerClass{}, handler.EnqueueRequestsFromMapFunc(r.bundleDeploymentsForClass),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A kind a revision waits for (UnknownKind) may be served now.
		// The caches of what the cluster serves are invalidated first.
		WatchesMetadata(kindSource("apiextensions.k8s.io/v1", "CustomResourceDefinition"), r.servedKindsHandler()).
		WatchesMetadata(kindSource("apiregistration.k8s.io/v1", "APIService"), r.servedKindsHandler()).
		WatchesRawSource(crsource.Channel(r.wake, &handler.EnqueueRequestForObject{})).
		// Managed objects are watched per identity (objectwatch); their
		// events go to the queue this source is given.
		WatchesRawSource(crsource.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			r.sched.SetQueue(q)
			r.watches = objectwatch.New(ctx, managedSelector, r.metadataFor, r.onObjectEvent)
			return nil
		})).
		WithOptions(opts).
		Build(r)
	if err != nil {
		return fmt.Errorf("building BundleDeployment controller: %w", err)
	}
	return nil
}

// metadataFor is the metadata client acting as id.
func (r *Reconciler) metadataFor(id identity.Identity) (metadata.Interface, error) {
	c, err := r.Identities.For(id)
	if err != nil {
		return nil, err
	}
	return c.Metadata, nil
}

// scope is what one reconcile knows.
type scope struct {
	bd   *v1alpha2.BundleDeployment
	prov provisioner.Provisioner
	// mem is what this process remembers of the BundleDeployment (see
	// memory): loaded when the reconcile starts, saved when it ends.
	mem *remembered
	// as is who the BundleDeployment's objects are read and written as.
	as *actor
	// facts are what the reconcile knows of the revisions, sources and
	// failures the status records (see statusFacts): the steps read and
	// change them, computeStatus projects them.
	facts statusFacts

	pinned   []v1alpha2.BundleSource
	revision string
	// specDigest is the full digest of the revision's pinned spec
	// (ownership.SpecDigest): what the revision is, where its name, a
	// short hash, only finds its Bundle.
	specDigest string
	bundle     *v1alpha2.Bundle
	// created is set when this reconcile created the revision's Bundle.
	created bool
	// rendered is the revision's plan, rendered when its Bundle was
	// created, until the install step takes it (planOf).
	rendered *rendered
	digest   string
	// values are the revision's resolved Helm values.
	values values.Resolved
	// markedFailed is set when the newest revision is marked failed (see
	// the function markedFailed): it is not retried, and the active
	// revision stays the corrected one.
	markedFailed bool
	// review is the newest revision's review, when it was reviewed (see
	// gate); computeStatus copies it to status.review.
	review *v1alpha2.BundleDeploymentReview
	// unreviewed is why the newest revision could not be reviewed, when
	// gate let it through to the apply unreviewed (reportUnreviewed).
	unreviewed error
	// preflighted is the plan the permission preflight passed in this
	// reconcile (the gate runs it before the review), so that applying it
	// does not check again.
	preflighted *apply.Plan
	// rolloutStarted is set when this reconcile made a new revision active.
	rolloutStarted bool
	// upgraded is the change of the installed version when the install
	// step made the newest revision active (nil when it did not), for the
	// upgrade events (upgradeNotes).
	upgraded *versionChange
	// correct is the corrected revision: the revision applied that an
	// earlier step decided to leave as it was applied; the drift step
	// corrects its drift.
	correct *appliedState
	// health is the health step's verdict on the active revision, nil
	// when it judged none.
	health *healthFacts
	// rolledBack is why the active revision was rolled back, if it was.
	rolledBack error
	// handOffWaits is set when the revision was refused because another
	// BundleDeployment still manages some of its objects (recordClaims).
	handOffWaits bool
	// warnings are what the API server warned about during this apply.
	warnings []string
	// keptCRDs are the CRDs the applied revision, a rollback, left at
	// their newer definition (keepCRDs), for the Installed message.
	keptCRDs []string
	// reports are written to Bundles' status at the end of the reconcile.
	reports map[string]*bundleReport

	// statusRefused is why a Bundle a status field named was not trusted
	// (the field was cleared).
	statusRefused error

	unpackErr  error
	installErr error
	// driftErr is why the drift of the corrected revision (correct) could not
	// be corrected, when a kind of it is not served (see waitsForKind).
	driftErr  error
	installed *installResult
	// requeueAfter is when floating sources are due to be resolved again.
	requeueAfter time.Duration
	// kindsSeen is how many changes of what the cluster serves this
	// process had seen when the reconcile started (see waitForKinds).
	kindsSeen uint64
	// written is the status as last written to (or read from) the API
	// server: what the status patch at the end of the reconcile is
	// computed against. A report written during the reconcile (a hook
	// being waited for) updates it.
	written *v1alpha2.BundleDeploymentStatus
}

// Reconcile drives one BundleDeployment toward its spec.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if r.sched.Detached(req.Name) {
		// Its detached reconcile queues it again when it ends; a spec
		// change or a deletion ends it at once.
		return ctrl.Result{}, nil
	}
	bd := &v1alpha2.BundleDeployment{}
	if err := r.Client.Get(ctx, req.NamespacedName, bd); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.Name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("getting BundleDeployment: %w", err)
	}
	if ok, err := r.adopted(ctx, bd); !ok || err != nil {
		return ctrl.Result{RequeueAfter: adoptRetry}, err
	}
	// One tenant's reconciles take at most TenantReconciles workers
	// (more while others leave them free), so that BundleDeployments
	// whose reconciles are slow cannot make another tenant's drift
	// correction and installs wait; a deletion takes no worker.
	// Everything done for it — this reconcile, fetches, the content it
	// stores, every render — counts against its tenant's share. A
	// reconcile that waits for a hook goes on without its worker
	// (schedule.Detach, reportHookWait).
	return r.sched.Run(ctx, bd, r.reconcile)
}

// reconcile is Reconcile's work on bd, once it has a worker: a turn of
// the scheduler, which finish ends.
func (r *Reconciler) reconcile(ctx context.Context, bd *v1alpha2.BundleDeployment) (result ctrl.Result, retErr error) {
	// A spec change or a deletion stops this reconcile where it waits:
	// the next one works on what the BundleDeployment is now.
	ctx, turn := r.sched.Begin(ctx, bd)
	// s is set once the reconcile has a scope to finish with.
	var s *scope
	// Deferred, so that it runs however the reconcile ends, a step's
	// panic included.
	defer func() { result, retErr = r.finish(ctx, turn, s, result, retErr) }()
	prov, ok, err := r.Provisioners.ForClass(ctx, r.Client, bd.Spec.ProvisionerClassName)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !ok {
		if r.orphanedByClass(ctx, bd) {
			// Its class was deleted after this manager installed it: the
			// uninstall must still run, or the BundleDeployment is stuck.
			r.forgetOtherUID(bd)
			return r.finalize(ctx, bd)
		}
		return ctrl.Result{}, nil
	}
	r.forgetOtherUID(bd)
	if !bd.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, bd)
	}
	if !controllerutil.ContainsFinalizer(bd, v1alpha2.FinalizerCleanup) {
		// The admission policy rukpak-cleanup-finalizer gives new
		// BundleDeployments of the built-in classes the finalizer; others,
		// and those created while it was not enforced, get it here,
		// before anything is written.
		patch := client.MergeFrom(bd.DeepCopy())
		controllerutil.AddFinalizer(bd, v1alpha2.FinalizerCleanup)
		if err := r.Client.Patch(ctx, bd, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding finalizer: %w", err)
		}
	}

	// The cache may not show the status this process wrote last.
	r.sched.CatchUpStatus(bd)
	s = &scope{bd: bd, prov: prov, mem: r.mem.load(bd.Name), written: bd.Status.DeepCopy(), kindsSeen: r.mem.servedKindsSeen()}
	s.facts = observe(&bd.Status, s.mem.applied)
	if bd.Spec.Paused {
		return ctrl.Result{}, nil
	}
	if err := r.runSteps(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: s.requeueAfter}, nil
}

// finish ends every reconcile that began its turn, and returns its
// result. In this order:
//
//  1. unless the turn was superseded (what the reconcile found is about a
//     spec, or a life, that is gone): the Bundles' reports (reportBundles)
//     and the status patch (patchStatus), against the status as last
//     written; the patch's error is joined to the reconcile's; once it is
//     written, the upgrade events (upgradeNotes, announceUpgrades);
//  2. a BundleDeployment waiting for a kind to be served is woken when
//     what the cluster serves changes (waitForKinds), or queued at once
//     when it changed while the reconcile ran (unless superseded: it is
//     queued again anyway);
//  3. the memory record is saved (memory.save): after the status is
//     written, and before the events of this reconcile's writes are
//     judged against what it applied;
//  4. the turn ends (schedule.Turn.End): a superseded reconcile is queued
//     again and returns neither error nor requeue, the deferred events
//     of its objects (those that arrived while it ran) are judged, and its context is cancelled.
//
// Steps 1 to 3 need a scope: a reconcile that ended before it built one
// (no class, a deletion, the finalizer not added) only ends its turn.
func (r *Reconciler) finish(ctx context.Context, turn *schedule.Turn, s *scope, result ctrl.Result, err error) (ctrl.Result, error) {
	if s != nil {
		name := s.bd.Name
		if !turn.Superseded() {
			r.reportBundles(ctx, s)
			var notes []upgradeNote
			if !s.bd.Spec.Paused {
				notes = upgradeNotes(name, versionsWritten(s.written), versionsFound(s), s.upgraded)
			}
			if perr := r.patchStatus(ctx, s, s.written); perr != nil {
				err = errors.Join(err, perr)
			} else {
				// Once the status says so: a status not written is
				// announced by the next reconcile.
				r.announceUpgrades(s, notes)
			}
		}
		if r.mem.waitForKinds(name, waitsForKind(s), s.kindsSeen) && !turn.Superseded() {
			r.enqueue(name)
		}
		r.mem.save(name, s.mem)
	}
	return turn.End(result, err)
}

// patchStatus computes the conditions from s and patches the status if it
// changed.
func (r *Reconciler) patchStatus(ctx context.Context, s *scope, orig *v1alpha2.BundleDeploymentStatus) error {
	bd := s.bd
	computeStatus(bd, s)
	if equality.Semantic.DeepEqual(orig, &bd.Status) {
		return nil
	}
	base := bd.DeepCopy()
	base.Status = *orig
	if err := r.Client.Status().Patch(ctx, bd, client.MergeFrom(base)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("patching status: %w", err)
	}
	r.sched.StatusWritten(bd, base.ResourceVersion)
	return nil
}

// orphanedByClass reports whether bd is being deleted, carries this
// manager's cleanup finalizer and names a ProvisionerClass that no longer
// exists: a BundleDeployment this manager installed (only it adds the
// finalizer, once it serves the class) whose class was deleted since.
// One whose class exists but names another controller is not ours.
func (r *Reconciler) orphanedByClass(ctx context.Context, bd *v1alpha2.BundleDeployment) bool {
	if bd.DeletionTimestamp.IsZero() || !controllerutil.ContainsFinalizer(bd, v1alpha2.FinalizerCleanup) {
		return false
	}
	err := r.Client.Get(ctx, client.ObjectKey{Name: bd.Spec.ProvisionerClassName}, &v1alpha2.ProvisionerClass{})
	return apierrors.IsNotFound(err)
}

// requeueWithin makes the reconcile come back within d.
func (s *scope) requeueWithin(d time.Duration) {
	if s.requeueAfter == 0 || d < s.requeueAfter {
		s.requeueAfter = d
	}
}
