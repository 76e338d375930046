package manager

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/shard"
)

// addShard adds what the manager of shard runs besides its controllers:
// a shard's manager announces it (shard.Announcer); the unsharded one
// reports the BundleDeployments whose label names no running shard
// (shard.Reporter), from a cache of its own that holds only the sharded
// BundleDeployments' metadata and the shards' Leases.
func addShard(mgr manager.Manager, kube kubernetes.Interface, recorder events.EventRecorder, name string) error {
	if name != "" {
		if err := mgr.Add(&shard.Announcer{Leases: kube.CoordinationV1(), Namespace: v1alpha2.SystemNamespace, Shard: name}); err != nil {
			return fmt.Errorf("adding the shard's announcement: %w", err)
		}
		return nil
	}
	copts := shard.ReporterCacheOptions(v1alpha2.SystemNamespace)
	copts.Scheme, copts.Mapper, copts.HTTPClient = mgr.GetScheme(), mgr.GetRESTMapper(), mgr.GetHTTPClient()
	c, err := cache.New(mgr.GetConfig(), copts)
	if err != nil {
		return fmt.Errorf("creating the shards' cache: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return fmt.Errorf("adding the shards' cache: %w", err)
	}
	api, err := client.New(mgr.GetConfig(), client.Options{HTTPClient: mgr.GetHTTPClient(), Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return fmt.Errorf("creating the shards' client: %w", err)
	}
	if err := mgr.Add(&shard.Reporter{Cache: c, API: api, Recorder: recorder, Namespace: v1alpha2.SystemNamespace}); err != nil {
		return fmt.Errorf("adding the shards' report: %w", err)
	}
	return nil
}
