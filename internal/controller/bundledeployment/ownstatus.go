package bundledeployment

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// ownStatus is the status this process last wrote to a BundleDeployment,
// kept until the cache shows it: a reconcile that follows its own status
// patch closely (the echo of its own apply queued it again, say) reads the
// object as it was before the patch, and would otherwise compute its
// status against that and patch again — a write of a custom resource that
// changes nothing but costs the API server as much as one that does.
type ownStatus struct {
	uid types.UID
	// base is the resourceVersion the patch was computed against: while
	// the cache still shows it, the cache has not seen the patch.
	base string
	// rv is the resourceVersion the patch made.
	rv     string
	status *v1alpha2.BundleDeploymentStatus
}

// catchUpStatus gives bd, read from the cache, the status this process
// wrote last when the cache has not seen that write yet (it still shows
// the version the write was made against). Any other version — the write
// itself, or one someone made since — is what it is.
func (r *Reconciler) catchUpStatus(bd *v1alpha2.BundleDeployment) {
	own, ok := r.mem.ownStatus(bd.Name)
	if !ok {
		return
	}
	if own.uid != bd.UID || own.base != bd.ResourceVersion {
		r.mem.dropOwnStatus(bd.Name, own.rv)
		return
	}
	bd.Status = *own.status.DeepCopy()
}

// statusWritten records the status bd has after this process patched it
// from version base.
func (r *Reconciler) statusWritten(bd *v1alpha2.BundleDeployment, base string) {
	r.mem.setOwnStatus(bd.Name, ownStatus{uid: bd.UID, base: base, rv: bd.ResourceVersion, status: bd.Status.DeepCopy()})
}
