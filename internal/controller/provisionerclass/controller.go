package provisionerclass

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/message"
	"github.com/rukpak/rukpak/pkg/provisioner"
)

// +kubebuilder:rbac:groups=core.rukpak.io,resources=provisionerclasses,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=core.rukpak.io,resources=provisionerclasses/status,verbs=get;update;patch

// Builtin are the classes rukpak ships.
var Builtin = []v1alpha2.ProvisionerClass{
	{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha2.ClassPlain},
		Spec: v1alpha2.ProvisionerClassSpec{ControllerName: v1alpha2.ControllerPlain,
			Description: "Plain Kubernetes manifests (plain+v0): the files of manifests/, applied in name order."},
	},
	{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha2.ClassRegistry},
		Spec: v1alpha2.ProvisionerClassSpec{ControllerName: v1alpha2.ControllerRegistry,
			Description: "OLM registry+v1 operator bundles."},
	},
	{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha2.ClassHelm},
		Spec: v1alpha2.ProvisionerClassSpec{ControllerName: v1alpha2.ControllerHelm,
			Description: "Helm charts, rendered by rukpak and applied by its own apply engine."},
	},
}

// CreateClasses creates the classes that do not exist yet (a restart that
// finds them writes nothing): the built-in ones (Builtin) for rukpak's
// manager. It runs once when the manager starts.
func CreateClasses(ctx context.Context, c client.Client, classes []v1alpha2.ProvisionerClass) error {
	for i := range classes {
		pc := classes[i].DeepCopy()
		err := c.Get(ctx, client.ObjectKeyFromObject(pc), &v1alpha2.ProvisionerClass{})
		if err == nil {
			continue
		}
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("reading ProvisionerClass %s: %w", pc.Name, err)
		}
		if err := c.Create(ctx, pc); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ProvisionerClass %s: %w", pc.Name, err)
		}
	}
	return nil
}

// Reconciler marks served classes Accepted.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// Provisioners are the controllerNames served.
	Provisioners provisioner.Set
}

// SetupWithManager registers the controller with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).For(&v1alpha2.ProvisionerClass{}).Complete(r)
}

// Reconcile sets Accepted on a class this manager serves.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pc := &v1alpha2.ProvisionerClass{}
	if err := r.Client.Get(ctx, req.NamespacedName, pc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !r.Provisioners.Serves(pc.Spec.ControllerName) {
		return ctrl.Result{}, nil
	}
	base := pc.DeepCopy()
	pc.Status.ObservedGeneration = pc.Generation
	changed := message.SetCondition(&pc.Status.Conditions, metav1.Condition{
		Type: v1alpha2.TypeAccepted, Status: metav1.ConditionTrue, Reason: v1alpha2.ReasonAccepted,
		Message: "served by " + pc.Spec.ControllerName, ObservedGeneration: pc.Generation,
	})
	if !changed && base.Status.ObservedGeneration == pc.Generation {
		return ctrl.Result{}, nil
	}
	if err := r.Client.Status().Patch(ctx, pc, client.MergeFrom(base)); err != nil {
		return ctrl.Result{}, fmt.Errorf("patching status: %w", err)
	}
	return ctrl.Result{}, nil
}
