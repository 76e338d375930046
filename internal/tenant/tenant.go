package tenant

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/ownership"
)

// Manager is the tenant of BundleDeployments that install as the manager
// (no spec.serviceAccount) and of Bundles no BundleDeployment controls.
// A namespace's name cannot hold parentheses, so no team is called that.
const Manager = "(manager)"

// Unattributed is the tenant of work whose context names none (rukpakctl's
// own renders, tests): it is bounded like any other tenant.
const Unattributed = "(unattributed)"

// Of returns the tenant of bd: the namespace its ServiceAccount lives in,
// or Manager when it installs as the manager.
func Of(bd *v1alpha2.BundleDeployment) string {
	if bd.Spec.ServiceAccount == nil || bd.Spec.ServiceAccount.Name == "" || bd.Spec.InstallNamespace == "" {
		return Manager
	}
	return bd.Spec.InstallNamespace
}

// Owner is who a Bundle's content is held for: its tenant, and the
// BundleDeployment that controls it ("" for none).
type Owner struct {
	// Tenant is the Bundle's tenant.
	Tenant string
	// BundleDeployment controls the Bundle; "" when none does.
	BundleDeployment string
}

// OfBundle returns the owner of b: the BundleDeployment that controls it
// (its controller reference, with the BundleDeployment's UID) and that
// one's tenant, read through r; Manager for a Bundle of no
// BundleDeployment. A label naming a BundleDeployment is not trusted: only
// the controller reference with the right UID counts.
func OfBundle(ctx context.Context, r client.Reader, b *v1alpha2.Bundle) (Owner, error) {
	if !ownership.StampedOut(b) {
		return Owner{Tenant: Manager}, nil
	}
	bd := &v1alpha2.BundleDeployment{}
	if err := r.Get(ctx, client.ObjectKey{Name: metav1.GetControllerOfNoCopy(b).Name}, bd); err != nil {
		if apierrors.IsNotFound(err) {
			return Owner{Tenant: Manager}, nil
		}
		return Owner{}, fmt.Errorf("reading the BundleDeployment of Bundle %s: %w", b.Name, err)
	}
	if !ownership.Controlled(bd, b) {
		return Owner{Tenant: Manager}, nil
	}
	return Owner{Tenant: Of(bd), BundleDeployment: bd.Name}, nil
}

type contextKey struct{}

// WithContext returns ctx carrying tenant t.
func WithContext(ctx context.Context, t string) context.Context {
	return context.WithValue(ctx, contextKey{}, t)
}

// From returns the tenant ctx carries, or Unattributed.
func From(ctx context.Context) string {
	if t, ok := ctx.Value(contextKey{}).(string); ok && t != "" {
		return t
	}
	return Unattributed
}
