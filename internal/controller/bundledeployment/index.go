package bundledeployment

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

const indexConfigMaps = "spec.sources.configMaps"

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
	list := &v1alpha2.BundleDeploymentList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{indexConfigMaps: obj.GetName()}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, bd := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Name: bd.Name}})
	}
	return reqs
}
