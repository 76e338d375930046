package apply

import (
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Options configure an Engine. FieldManager, OwnerKind and every key of
// Keys are the caller's, and required: the engine defines none of them.
type Options struct {
	// FieldManager owns every field the engine applies.
	FieldManager string
	// OwnerKind is the kind of the objects that own plans (the value of
	// the Keys.OwnerKind label), and how messages name an owner.
	OwnerKind string
	// Keys are the labels and annotations the engine writes and reads.
	Keys Keys
	// Concurrency is how many objects are written at once.
	Concurrency int
	// EstablishTimeout bounds the wait for a bundle's CRDs to be Established.
	EstablishTimeout time.Duration
	// HookTimeout bounds the wait for one hook Job or Pod to finish (see
	// Plan.RunHooks); Helm's default, 5 minutes, when zero.
	HookTimeout time.Duration
	// Events reads the warning events about hooks being waited for (a
	// Job's FailedCreate, say), uncached; the engine's reader when nil.
	// The manager passes its own reader: an install identity may not be
	// allowed to list events.
	Events client.Reader
	// KindNotServed, when set, is called whenever the API server answers
	// a write, a dry-run or a list of objects of a kind that the
	// RESTMapper mapped that it does not serve that kind (CodeUnknownKind):
	// the RESTMapper, and whatever else caches what the cluster serves, is
	// out of date (a CRD was deleted, an APIService went away).
	KindNotServed func()
}

// Keys are the label and annotation keys by which the engine marks the
// objects it writes as their owner's, and reads what a bundle's objects
// ask of it. (Helm's hook annotations are Helm's, and the engine's own
// constants.)
type Keys struct {
	// OwnerKind, OwnerName and OwnerUID are the labels the engine puts on
	// every object it writes: the owner's kind (Options.OwnerKind), name
	// and UID. Prune deletes, and collisions accept, only objects
	// labelled so for the owner at hand.
	OwnerKind, OwnerName, OwnerUID string
	// Revision is the annotation that records, on a run-once Job or a
	// hook, the revision that wrote it (Owner.Revision).
	Revision string
	// ReplaceOnImmutable is the annotation that, "true" on an object,
	// lets the engine delete and create it again when a field that
	// cannot change does.
	ReplaceOnImmutable string
	// Optional is the annotation that, "true" on an object, leaves it out
	// of a plan when the cluster does not serve its kind.
	Optional string
}
