package apply

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rukpak/rukpak/internal/inventory"
)

// Action is what a write did to one object.
type Action string

// The actions.
const (
	// Created: the object did not exist.
	Created Action = "created"
	// Configured: the object existed and changed.
	Configured Action = "configured"
	// Unchanged: the object existed and the apply changed nothing.
	Unchanged Action = "unchanged"
	// Deleted: the object was deleted.
	Deleted Action = "deleted"
	// Skipped: the object was left alone (it is gone, being deleted, or
	// someone else now owns it).
	Skipped Action = "skipped"
	// Kept: a prune left the object in place, still labelled as the
	// owner's (a CRD kept by policy, an object annotated
	// helm.sh/resource-policy: keep, one another BundleDeployment waits
	// for); Change.UID says which object, for the owner's release record.
	Kept Action = "kept"
)

// Change is what happened to one object.
type Change struct {
	// ID names the object.
	ID inventory.ID
	// Action is what happened.
	Action Action
	// Resource is the object's API resource (set for applied objects).
	Resource schema.GroupVersionResource
	// ResourceVersion is the object's resourceVersion after the write.
	ResourceVersion string
	// Generation is the object's metadata.generation after the write; 0 for
	// kinds that do not track it.
	Generation int64
	// Labels and Annotations are the ones the bundle sets on the object (not
	// what others added).
	Labels, Annotations map[string]string
	// Hash identifies the configuration applied (see Entry.Hash).
	Hash string
	// RunOnce is Entry.RunOnce.
	RunOnce bool
	// Hook is Entry.Hook.
	Hook bool
	// UID is the object's metadata.uid, set for Kept objects.
	UID types.UID
}

// ChangeSet is what one Apply or Prune did.
type ChangeSet struct {
	// Entries are the changes, one per object.
	Entries []Change
}

func (cs *ChangeSet) add(c Change) { cs.Entries = append(cs.Entries, c) }

// changes reports what happened to the objects at idx that were written.
func (e *Engine) changes(p *run, idx []int, before []string, after []written) *ChangeSet {
	cs := &ChangeSet{}
	for _, i := range idx {
		if after[i].rv == "" {
			continue
		}
		a := Configured
		switch before[i] {
		case "":
			a = Created
		case after[i].rv:
			a = Unchanged
		}
		obj := p.items[i].obj
		cs.add(Change{ID: p.items[i].id, Action: a, Resource: p.items[i].resource, ResourceVersion: after[i].rv, Generation: after[i].generation,
			Labels: obj.GetLabels(), Annotations: obj.GetAnnotations(), Hash: p.items[i].hash, RunOnce: p.items[i].runOnce, Hook: p.items[i].hook != nil})
	}
	return cs
}
