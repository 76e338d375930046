package bundledeployment

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/ownership"
	"github.com/rukpak/rukpak/pkg/failure"
)

// trustStatus checks the Bundles the status names (activeBundle,
// lastHealthyBundle) before anything reads them: status can be written by
// anyone allowed bundledeployments/status, so a name there is only a
// claim. A field naming a Bundle this BundleDeployment did not create (see
// package ownership) is cleared in the scope's facts (s.facts) —
// activeBundle back to the revision this process applied — and the
// refusal is reported (Installed=False, BundleNotOwned, and an event);
// nothing of that Bundle is installed,
// re-applied, rolled back to or deleted. A name whose Bundle does not
// exist (history removed it) is left: it is checked again if it comes
// back.
func (r *Reconciler) trustStatus(ctx context.Context, s *scope) (bool, error) {
	st := s.mem.applied
	// The names as observed, and the facts they stand for.
	fields := []struct {
		name     string
		observed string
		fact     *string
	}{
		{"activeBundle", s.bd.Status.ActiveBundle, &s.facts.active},
		{"lastHealthyBundle", s.bd.Status.LastHealthyBundle, &s.facts.lastHealthy},
	}
	for _, f := range fields {
		name := f.observed
		if name == "" || (st != nil && st.bundle == name) {
			continue
		}
		err := r.checkNamed(ctx, s.bd, name)
		if failure.As(err) == nil {
			if err != nil {
				return false, err
			}
			continue
		}
		refused := fmt.Errorf("status.%s names Bundle %s, which is ignored and cleared: %w", f.name, name, err)
		r.Recorder.Eventf(s.bd, nil, corev1.EventTypeWarning, v1alpha2.ReasonBundleNotOwned, "Install", "%v", refused)
		if s.statusRefused == nil {
			s.statusRefused = refused
		} else {
			s.statusRefused = fmt.Errorf("%w; %v", s.statusRefused, refused)
		}
		*f.fact = ""
		if f.name == "activeBundle" {
			// Its version is not known either: the resolve step finds
			// it again (knowInstalledVersion).
			s.facts.installedVersion = ""
			if st != nil {
				*f.fact = st.bundle
			}
		}
	}
	return true, nil
}

// checkNamed checks the Bundle name in a status field of bd: nil when
// it is bd's or does not exist, a BundleNotOwned failure when it is not
// bd's.
func (r *Reconciler) checkNamed(ctx context.Context, bd *v1alpha2.BundleDeployment, name string) error {
	b := &v1alpha2.Bundle{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: name}, b)
	switch {
	case apierrors.IsNotFound(err):
		if !ownership.IsRevisionName(bd.Name, name) {
			return failure.New(v1alpha2.ReasonBundleNotOwned, "%s is not the name of a revision of BundleDeployment %s", name, bd.Name)
		}
		return nil
	case err != nil:
		return fmt.Errorf("getting Bundle %s: %w", name, err)
	}
	return ownership.Check(bd, b, r.bundleWriters())
}

// bundleDeploymentsForBundle maps a deleted Bundle to the
// BundleDeployments it may have blocked or belonged to: its controller and
// the one it is labelled for, and the one whose revision name it has.
func bundleDeploymentsForBundle(_ context.Context, obj client.Object) []reconcile.Request {
	names := map[string]bool{obj.GetLabels()[v1alpha2.LabelBundleDeployment]: true}
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil && ref.Kind == v1alpha2.BundleDeploymentKind {
		names[ref.Name] = true
	}
	if i := strings.LastIndexByte(obj.GetName(), '-'); i > 0 {
		names[obj.GetName()[:i]] = true
	}
	var out []reconcile.Request
	for n := range names {
		if n != "" {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Name: n}})
		}
	}
	return out
}
