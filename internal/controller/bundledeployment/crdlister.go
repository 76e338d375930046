package bundledeployment

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/internal/crdsafety"
)

// customResourceLister lists the custom resources of a CRD being upgraded
// as the manager, from the API server, so that every namespace's objects
// are judged whatever the install identity may read; where the manager
// may not list them (it is not cluster-admin), it lists them as the
// install identity instead.
type customResourceLister struct {
	// manager reads as the manager itself, install as the install
	// identity (nil when that is the manager); neither is a cache.
	manager, install client.Reader
}

var _ crdsafety.Lister = customResourceLister{}

// List lists as the manager, and as the install identity when the manager
// is forbidden.
func (l customResourceLister) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	err := l.manager.List(ctx, list, opts...)
	if apierrors.IsForbidden(err) && l.install != nil {
		return l.install.List(ctx, list, opts...)
	}
	return err
}
