package bundledeployment

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

const (
	indexConfigMaps = "spec.sources.configMaps"
	indexClass      = "spec.provisionerClassName"
)

// classIndex indexes a BundleDeployment by its class.
func classIndex(obj client.Object) []string {
	return []string{obj.(*v1alpha2.BundleDeployment).Spec.ProvisionerClassName}
}

// bundleDeploymentsForClass maps a ProvisionerClass to the
// BundleDeployments of that class.
func (r *Reconciler) bundleDeploymentsForClass(ctx context.Context, obj client.Object) []reconcile.Request {
	return r.listRequests(ctx, client.MatchingFields{indexClass: obj.GetName()})
}

// configMapIndex indexes a BundleDeployment by the ConfigMaps it reads.
func configMapIndex(obj client.Object) []string {
	bd := obj.(*v1alpha2.BundleDeployment)
	var names []string
	for _, src := range bd.Spec.Sources {
		for _, cm := range src.ConfigMaps {
			names = append(names, cm.ConfigMap.Name)
		}
	}
	return names
}

// bundleDeploymentsForConfigMap maps a ConfigMap in the system namespace to
// the BundleDeployments that read it.
func (r *Reconciler) bundleDeploymentsForConfigMap(ctx context.Context, obj client.Object) []reconcile.Request {
	if obj.GetNamespace() != v1alpha2.SystemNamespace {
		return nil
	}
	return r.listRequests(ctx, client.MatchingFields{indexConfigMaps: obj.GetName()})
}

// listRequests returns a request for every BundleDeployment matching opts.
func (r *Reconciler) listRequests(ctx context.Context, opts ...client.ListOption) []reconcile.Request {
	list := &v1alpha2.BundleDeploymentList{}
	if err := r.Client.List(ctx, list, opts...); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, bd := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Name: bd.Name}})
	}
	return reqs
}
