package manager

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/upload"
)

// uploadGCInterval is how often uploads no Bundle or BundleDeployment
// refers to are deleted.
const uploadGCInterval = 2 * time.Minute

// addUploadGC deletes, on the leader, uploads that no Bundle or
// BundleDeployment refers to any more (uploads younger than the store's
// grace period are kept: `rukpakctl run` uploads before it points a
// BundleDeployment at them).
func addUploadGC(mgr manager.Manager, uploads *upload.Store) error {
	c := mgr.GetClient()
	run := manager.RunnableFunc(func(ctx context.Context) error {
		t := time.NewTicker(uploadGCInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
			inUse, err := uploadsInUse(ctx, c)
			if err == nil {
				_, err = uploads.GC(ctx, inUse)
			}
			if err != nil {
				log.FromContext(ctx).Error(err, "collecting unused uploads")
			}
		}
	})
	if err := mgr.Add(run); err != nil {
		return fmt.Errorf("adding upload GC: %w", err)
	}
	return nil
}

// uploadsInUse returns the upload digests Bundles and BundleDeployments
// refer to.
func uploadsInUse(ctx context.Context, c client.Reader) (map[string]bool, error) {
	inUse := map[string]bool{}
	add := func(srcs []v1alpha2.BundleSource) {
		for _, s := range srcs {
			if s.Upload != nil {
				inUse[s.Upload.Digest] = true
			}
		}
	}
	bundles := &v1alpha2.BundleList{}
	if err := c.List(ctx, bundles); err != nil {
		return nil, fmt.Errorf("listing Bundles: %w", err)
	}
	for i := range bundles.Items {
		add(bundles.Items[i].Spec.Sources)
	}
	bds := &v1alpha2.BundleDeploymentList{}
	if err := c.List(ctx, bds); err != nil {
		return nil, fmt.Errorf("listing BundleDeployments: %w", err)
	}
	for i := range bds.Items {
		add(bds.Items[i].Spec.Sources)
	}
	return inUse, nil
}
