package bundledeployment

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/inventory"
)

// appliedObject is what one object looked like right after rukpak applied
// it, as far as drift detection needs to know.
type appliedObject struct {
	// resource is the object's API resource (which drift watch sees it).
	resource   schema.GroupVersionResource
	rv         string
	generation int64
	// labels and annotations are the ones the bundle sets.
	labels, annotations map[string]string
	// hash identifies the configuration applied (apply.Entry.Hash).
	hash string
	// runOnce is a Job that removes itself when it finishes
	// (apply.Entry.RunOnce): once applied, its absence is not drift.
	runOnce bool
	// hook is a Helm hook (apply.Entry.Hook): never drift.
	hook bool
	// kept is a CRD a rollback left at its newer, installed definition
	// (keepCRDs): not applied, never drift, still in the inventory.
	kept bool
}

func appliedFrom(c apply.Change) appliedObject {
	return appliedObject{resource: c.Resource, rv: c.ResourceVersion, generation: c.Generation, labels: c.Labels, annotations: c.Annotations, hash: c.Hash, runOnce: c.RunOnce, hook: c.Hook}
}

// recorded is what the inventory record rec says was applied of e.
func recorded(e apply.Entry, rec inventory.Record) appliedObject {
	return appliedObject{resource: e.Resource, rv: rec.ResourceVersion, generation: rec.Generation, labels: e.Labels, annotations: e.Annotations, hash: rec.Hash, runOnce: e.RunOnce, hook: e.Hook}
}

// record is what the inventory records of a.
func (a appliedObject) record() inventory.Record {
	return inventory.Record{Hash: a.hash, ResourceVersion: a.rv, Generation: a.generation, Keep: a.keep()}
}

// keep reports whether the revision applied the object with
// helm.sh/resource-policy: keep (as Helm reads it: case and spaces
// ignored), so that a prune leaves it in place. Hooks are never left in
// place: their delete policy decides.
func (a appliedObject) keep() bool {
	return !a.hook && strings.EqualFold(strings.TrimSpace(a.annotations[v1alpha2.AnnotationResourcePolicy]), v1alpha2.ResourcePolicyKeep)
}

// drifted reports whether live (metadata is enough) was changed by someone
// else since the apply. For kinds that track metadata.generation, only a
// new generation (a spec change) or a change to the labels and annotations
// the bundle sets counts: status updates and metadata others add do not.
// For other kinds any change counts; re-applying them is cheap and a no-op
// when nothing the bundle sets changed.
func (a appliedObject) drifted(live client.Object) bool {
	if a.kept || live.GetResourceVersion() == a.rv {
		return false
	}
	if !live.GetDeletionTimestamp().IsZero() {
		return true
	}
	if !subset(a.labels, live.GetLabels()) || !subset(a.annotations, live.GetAnnotations()) {
		return true
	}
	if a.generation > 0 {
		return live.GetGeneration() != a.generation
	}
	return true
}

// subset reports whether every key of want has the same value in got.
func subset(want, got map[string]string) bool {
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}
