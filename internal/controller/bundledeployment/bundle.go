package bundledeployment

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/ownership"
)

// findBundle looks up the revision's Bundle. One that exists must be this
// BundleDeployment's own, with exactly the pinned spec (useBundle); one
// that does not is created, born complete, once its content is unpacked
// (createBundle).
func (r *Reconciler) findBundle(ctx context.Context, s *scope) (bool, error) {
	b := &v1alpha2.Bundle{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: s.revision}, b)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		s.unpackErr = fmt.Errorf("getting Bundle %s: %w", s.revision, err)
		return false, s.unpackErr
	}
	return r.useBundle(ctx, s, b)
}

// useBundle makes b, the Bundle found under the revision's name, the
// revision's Bundle when this BundleDeployment created it with the pinned
// spec.
func (r *Reconciler) useBundle(ctx context.Context, s *scope, b *v1alpha2.Bundle) (bool, error) {
	if err := ownership.CheckSpec(s.bd, b, r.wantSpec(s), r.bundleWriters()); err != nil {
		// Planted under the revision's name by someone else: never used,
		// never deleted. Its writer (or the garbage collector, for one
		// left by a deleted BundleDeployment of the same name) removes it.
		s.unpackErr = err
		s.installErr = err
		r.Recorder.Eventf(s.bd, nil, corev1.EventTypeWarning, v1alpha2.ReasonBundleNotOwned, "Install", "%v", err)
		s.requeueWithin(notOwnedRecheck)
		if st := s.mem.applied; st != nil && st.bundle != "" && st.bundle == s.facts.active {
			s.leaveAsApplied(st)
			return false, nil
		}
		return false, nil
	}
	s.bundle = b
	return true, nil
}

// wantSpec is the spec of the revision about to be installed: class,
// pinned sources and config.
func (r *Reconciler) wantSpec(s *scope) v1alpha2.BundleSpec {
	return v1alpha2.BundleSpec{ProvisionerClassName: s.bd.Spec.ProvisionerClassName, Sources: s.pinned, Config: s.bd.Spec.Config}
}

// notOwnedRecheck is how often a revision whose name is taken by a Bundle
// this BundleDeployment did not create looks again.
const notOwnedRecheck = 30 * time.Second

// bundleWriters are the user names a Bundle a BundleDeployment uses must
// have been written by (the manager's own), when known.
func (r *Reconciler) bundleWriters() []string {
	if r.Approval == nil {
		return nil
	}
	return r.Approval.TrustedUsers
}
