package renderstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/internal/tenant"
)

// LabelTenant labels every chunk with the tenant of the revision whose
// render it holds (tenantLabel), so that a tenant's renders are counted
// with one list.
const LabelTenant = "core.rukpak.io/render-tenant"

// annotationBytes, on chunk 0, is the size of the compressed payload: what
// the render costs its tenant.
const annotationBytes = "core.rukpak.io/render-bytes"

// DefaultTenantRenders is how many renders one tenant may keep at once
// when Options.TenantRenders is 0.
const DefaultTenantRenders = 64

// ErrQuota is returned by Save (wrapped in a *QuotaError) when a render
// would take its tenant past its bounds.
var ErrQuota = errors.New("the tenant's bound on kept renders is reached")

// QuotaError says which bound of its tenant a render would pass.
type QuotaError struct {
	msg string
}

// Error implements error.
func (e *QuotaError) Error() string { return e.msg }

// Unwrap makes errors.Is(err, ErrQuota) hold.
func (e *QuotaError) Unwrap() error { return ErrQuota }

// tenantLabel is the LabelTenant value of tenant t: its namespace, or
// for the manager's own tenants ("(manager)"), which are no label value,
// their name without parentheses and ".rukpak" (no namespace has a dot).
func tenantLabel(t string) string {
	if strings.HasPrefix(t, "(") {
		return strings.Trim(t, "()") + ".rukpak"
	}
	return t
}

// usage is what a tenant's kept renders hold.
type usage struct {
	renders int
	bytes   int64
}

// tenantUsage lists the renders tenant t keeps, other than bundle's.
func (s *Store) tenantUsage(ctx context.Context, t, bundle string) (usage, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := s.r.List(ctx, list, client.InNamespace(s.namespace), client.MatchingLabels{LabelTenant: tenantLabel(t)}); err != nil {
		return usage{}, fmt.Errorf("listing the renders tenant %s keeps: %w", t, err)
	}
	var u usage
	for _, m := range list.Items {
		if m.Annotations[annotationChunk] != "0" || m.Annotations[annotationBundle] == bundle {
			continue
		}
		n, _ := strconv.ParseInt(m.Annotations[annotationBytes], 10, 64)
		u.renders++
		u.bytes += max(n, 0)
	}
	return u, nil
}

// checkTenant fails with a *QuotaError unless a render of size bytes of
// bundle fits the bounds of the tenant ctx carries: at most
// Options.TenantRenders renders kept, and its kept renders and its
// content in the content store (Options.ContentUsage) within
// Options.TenantQuota. It records what the tenant's renders hold
// (TenantBytes). tenant.Manager is held to neither.
func (s *Store) checkTenant(ctx context.Context, bundle string, size int64) error {
	t := tenant.From(ctx)
	if t == tenant.Manager {
		// The manager's own installs are the admin's, who could keep
		// these Secrets without rukpak: the bounds keep teams from
		// crowding etcd and each other. Not listing its renders also
		// keeps a save from reading every render of thousands of Helm
		// BundleDeployments installed as the manager.
		return nil
	}
	u, err := s.tenantUsage(ctx, t, bundle)
	if err != nil {
		return err
	}
	s.setTenantBytes(t, u.bytes)
	if u.renders >= s.opts.TenantRenders {
		return &QuotaError{msg: fmt.Sprintf("tenant %s keeps %d renders of revisions in %s, its bound (--tenant-renders %d): delete revisions or BundleDeployments of the tenant to keep this one's",
			t, u.renders, s.namespace, s.opts.TenantRenders)}
	}
	if s.opts.TenantQuota <= 0 {
		return nil
	}
	var content int64
	if s.opts.ContentUsage != nil {
		if content, err = s.opts.ContentUsage(t); err != nil {
			return fmt.Errorf("reading tenant %s's use of the content store: %w", t, err)
		}
	}
	if content+u.bytes+size > s.opts.TenantQuota {
		return &QuotaError{msg: fmt.Sprintf("tenant %s's quota of %s in the content store (--tenant-store-quota) is full: its content holds %s and its %d kept renders %s, and the render of revision %s needs %s more; delete revisions or BundleDeployments of the tenant to make room",
			t, quantity(s.opts.TenantQuota), quantity(content), u.renders, quantity(u.bytes), bundle, quantity(size))}
	}
	return nil
}

// TenantBytes returns what the renders of tenant t were last seen to
// hold in all (compressed), for the content store's tenant quota: it is
// counted at every Save of the tenant, and follows the saves and deletes
// of this Store; 0 for a tenant not seen since the manager started.
func (s *Store) TenantBytes(t string) int64 {
	s.usageMu.Lock()
	defer s.usageMu.Unlock()
	return s.usage[t]
}

// setTenantBytes records that tenant t's renders hold n bytes.
func (s *Store) setTenantBytes(t string, n int64) {
	s.usageMu.Lock()
	defer s.usageMu.Unlock()
	s.usage[t] = n
}

// addTenantBytes records that tenant t's renders hold n bytes more (less
// when negative).
func (s *Store) addTenantBytes(t string, n int64) {
	s.usageMu.Lock()
	defer s.usageMu.Unlock()
	s.usage[t] = max(s.usage[t]+n, 0)
}

// forgetChunks records that chunks, being deleted, no longer count for
// their tenant.
func (s *Store) forgetChunks(chunks []metav1.PartialObjectMetadata) {
	for _, c := range chunks {
		if c.Annotations[annotationChunk] != "0" {
			continue
		}
		n, _ := strconv.ParseInt(c.Annotations[annotationBytes], 10, 64)
		l := c.Labels[LabelTenant]
		t := l
		if strings.HasSuffix(l, ".rukpak") {
			t = "(" + strings.TrimSuffix(l, ".rukpak") + ")"
		}
		s.addTenantBytes(t, -max(n, 0))
	}
}

// quantity formats n bytes for a message: "912Ki", "24Mi".
func quantity(n int64) string {
	return resource.NewQuantity(n, resource.BinarySI).String()
}
