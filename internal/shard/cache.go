package shard

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// ByObject are the manager's cache settings of shard: it caches only the
// BundleDeployments and Bundles of shard.
func ByObject(shard string) map[client.Object]cache.ByObject {
	sel := Selector(shard)
	return map[client.Object]cache.ByObject{
		&v1alpha2.BundleDeployment{}: {Label: sel},
		&v1alpha2.Bundle{}:           {Label: sel},
	}
}

// ReporterCacheOptions are the settings of the Reporter's own cache: the
// sharded BundleDeployments (read as metadata) and the shards' Leases in
// namespace, all selected by the shard label.
func ReporterCacheOptions(namespace string) cache.Options {
	return cache.Options{
		DefaultLabelSelector: Sharded(),
		DefaultTransform:     cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&coordinationv1.Lease{}: {Namespaces: map[string]cache.Config{namespace: {}}},
		},
	}
}
