package bundle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/approval"
	"github.com/rukpak/rukpak/internal/builtins"
	"github.com/rukpak/rukpak/internal/clusterinfo"
	"github.com/rukpak/rukpak/internal/content"
	"github.com/rukpak/rukpak/internal/contentserver"
	"github.com/rukpak/rukpak/internal/message"
	"github.com/rukpak/rukpak/internal/ownership"
	"github.com/rukpak/rukpak/internal/source"
	"github.com/rukpak/rukpak/internal/tenant"
	"github.com/rukpak/rukpak/internal/values"
	"github.com/rukpak/rukpak/pkg/failure"
	"github.com/rukpak/rukpak/pkg/provisioner"
)

// +kubebuilder:rbac:groups=core.rukpak.io,resources=bundles,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=core.rukpak.io,resources=bundles/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=core.rukpak.io,resources=bundles/finalizers,verbs=update
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// Reconciler reconciles Bundles of the classes its provisioners serve.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// Provisioners are the classes served.
	Provisioners provisioner.Set
	// Sources resolve floating refs of Bundles created on their own.
	Sources source.Registry
	// Unpacker puts content into the store.
	Unpacker *content.Unpacker
	// ContentURL is the content server's base URL; "" when none runs.
	ContentURL string
	// Cluster tells formats that need it (Helm) what the cluster serves.
	Cluster *clusterinfo.Reader
	// Approval, when set, re-checks who asked for a Bundle before it is
	// unpacked (see Approver).
	Approval Approver
	// Renders, when set, are the renders kept for revisions: a Bundle's is
	// deleted with it, without waiting for the garbage collector.
	Renders RenderDeleter
}

// RenderDeleter deletes the render kept for a Bundle, if any.
// renderstore.Store is one.
type RenderDeleter interface {
	Delete(ctx context.Context, bundleName string) error
}

// Approver re-checks that whoever wrote a Bundle (its requested-by
// annotations) may use its class and every Secret and ConfigMap it names;
// a Bundle the manager wrote for a BundleDeployment passes (that
// BundleDeployment's requester is checked). approval.Checker is one.
type Approver interface {
	CheckBundle(ctx context.Context, b *v1alpha2.Bundle) error
}

var _ Approver = (*approval.Checker)(nil)

// approvalRecheck is how often a Bundle refused for its requester's
// rights is checked again: an admin grants them outside the Bundle, which
// triggers no reconcile.
const approvalRecheck = 30 * time.Second

// SetupWithManager registers the controller with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha2.Bundle{}).
		// A class created (or changed) after its Bundles.
		Watches(&v1alpha2.ProvisionerClass{}, handler.EnqueueRequestsFromMapFunc(r.bundlesForClass),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(opts).
		Complete(r)
}

// bundlesForClass maps a ProvisionerClass to the Bundles of that class.
func (r *Reconciler) bundlesForClass(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &v1alpha2.BundleList{}
	if err := r.Client.List(ctx, list); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if list.Items[i].Spec.ProvisionerClassName == obj.GetName() {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Name: list.Items[i].Name}})
		}
	}
	return reqs
}

// Reconcile unpacks one Bundle.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	b := &v1alpha2.Bundle{}
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	prov, ok, err := r.Provisioners.ForClass(ctx, r.Client, b.Spec.ProvisionerClassName)
	if err != nil || !ok {
		return ctrl.Result{}, err
	}
	if !b.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, b)
	}
	if ownership.StampedOut(b) {
		// Its BundleDeployment's controller unpacks it, renders it once
		// and reports it (status) in the write it makes anyway.
		return ctrl.Result{}, nil
	}
	// A Bundle of no BundleDeployment is the manager tenant's.
	ctx = tenant.WithContext(ctx, tenant.Manager)
	if !controllerutil.ContainsFinalizer(b, v1alpha2.FinalizerContent) {
		patch := client.MergeFrom(b.DeepCopy())
		controllerutil.AddFinalizer(b, v1alpha2.FinalizerContent)
		if err := r.Client.Patch(ctx, b, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding finalizer: %w", err)
		}
	}
	if b.UnpackPhase() == v1alpha2.BundlePhaseUnpacked && r.Unpacker.Store().Has(b.ContentDigest()) {
		return ctrl.Result{}, nil
	}

	orig := b.Status.DeepCopy()
	defer func() {
		if equality.Semantic.DeepEqual(orig, &b.Status) {
			return
		}
		base := b.DeepCopy()
		base.Status = *orig
		if err := r.Client.Status().Patch(ctx, b, client.MergeFrom(base)); client.IgnoreNotFound(err) != nil {
			retErr = errors.Join(retErr, fmt.Errorf("patching status: %w", err))
		}
	}()
	b.Status.ObservedGeneration = b.Generation

	// Nothing is resolved or fetched, so no credential is used, for a
	// requester who may not use it.
	if r.Approval != nil {
		if err := r.Approval.CheckBundle(ctx, b); err != nil {
			if failure.As(err) == nil {
				return ctrl.Result{}, err
			}
			b.Status.Phase = v1alpha2.BundlePhaseFailed
			setUnpacked(b, metav1.ConditionFalse, failure.Reason(err, v1alpha2.ReasonNotAuthorized), err.Error())
			return ctrl.Result{RequeueAfter: approvalRecheck}, nil
		}
	}

	// A Bundle is one fixed revision: once its floating sources are pinned,
	// the pins are kept.
	pinned, err := r.Sources.Resolve(ctx, b.Spec.Sources, b.Status.ResolvedSources, true)
	if err == nil {
		b.Status.ResolvedSources = pinned
		b.Status.ContentDigest, err = r.Unpacker.Ensure(ctx, b.Name, pinned, "")
	}
	if err != nil {
		b.Status.Phase = v1alpha2.BundlePhaseFailed
		setUnpacked(b, metav1.ConditionFalse, failure.Reason(err, v1alpha2.ReasonUnpackFailed), err.Error())
		if failure.As(err) != nil {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	b.Status.Phase = v1alpha2.BundlePhaseUnpacked
	b.Status.ObjectCount = r.countObjects(ctx, b, prov)
	if r.ContentURL != "" {
		b.Status.ContentURL = contentserver.URL(r.ContentURL, b.Name)
	}
	setUnpacked(b, metav1.ConditionTrue, v1alpha2.ReasonUnpacked, "content "+b.Status.ContentDigest+" is in the content store")
	return ctrl.Result{}, nil
}

// countObjects renders the content to count its objects; content that does
// not render counts 0 (the BundleDeployment reports why).
func (r *Reconciler) countObjects(ctx context.Context, b *v1alpha2.Bundle, prov provisioner.Provisioner) int32 {
	fsys, err := r.Unpacker.Store().FS(b.Status.ContentDigest)
	if err != nil {
		return 0
	}
	vals, err := values.Resolve(ctx, r.Client, v1alpha2.SystemNamespace, b.Spec.Config)
	if err != nil {
		return 0
	}
	// A Bundle of a BundleDeployment renders as that install; one made on
	// its own as an install named after it, without a namespace.
	release, ns := b.Name, ""
	if name := b.Labels[v1alpha2.LabelBundleDeployment]; name != "" {
		release = name
		bd := &v1alpha2.BundleDeployment{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, bd); err == nil {
			ns = bd.Spec.InstallNamespace
		}
	}
	cfg, err := builtins.FormatConfig(prov, release, ns, b.Spec.Config, vals, r.Cluster)
	if err != nil {
		return 0
	}
	objs, err := prov.Format.Objects(ctx, fsys, cfg)
	if err != nil {
		return 0
	}
	return int32(len(objs))
}

func setUnpacked(b *v1alpha2.Bundle, status metav1.ConditionStatus, reason, msg string) {
	message.SetCondition(&b.Status.Conditions, metav1.Condition{
		Type: v1alpha2.TypeUnpacked, Status: status, Reason: reason, Message: msg, ObservedGeneration: b.Generation,
	})
}

// finalize deletes the Bundle's content unless another Bundle shares it.
func (r *Reconciler) finalize(ctx context.Context, b *v1alpha2.Bundle) error {
	if !controllerutil.ContainsFinalizer(b, v1alpha2.FinalizerContent) {
		return nil
	}
	if d := b.ContentDigest(); d != "" {
		list := &v1alpha2.BundleList{}
		if err := r.Client.List(ctx, list); err != nil {
			return fmt.Errorf("listing Bundles: %w", err)
		}
		shared := false
		for i := range list.Items {
			if list.Items[i].Name != b.Name && list.Items[i].ContentDigest() == d {
				shared = true
				break
			}
		}
		if !shared {
			if err := r.Unpacker.Store().Delete(d); err != nil {
				return fmt.Errorf("deleting content %s: %w", d, err)
			}
		}
	}
	if r.Renders != nil {
		if err := r.Renders.Delete(ctx, b.Name); err != nil {
			return fmt.Errorf("deleting the render kept for Bundle %s: %w", b.Name, err)
		}
	}
	r.Unpacker.Forget(b.Name)
	patch := client.MergeFrom(b.DeepCopy())
	controllerutil.RemoveFinalizer(b, v1alpha2.FinalizerContent)
	if err := r.Client.Patch(ctx, b, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing finalizer: %w", err)
	}
	return nil
}
