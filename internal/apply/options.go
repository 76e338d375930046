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
	// ApplyOptions.Hooks); Helm's default, 5 minutes, when zero.
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

// ApplyOptions are the settings of one Apply (or DryRun) of a Plan. They
// belong to the call, not to the Plan, which applying never changes: the
// same Plan may be applied with different options. The zero value applies
// with a dry-run first, checks no collisions and runs no hooks.
type ApplyOptions struct {
	// Direct makes Apply write without a server-side dry-run first:
	// existing objects are still read and checked against Collisions
	// before anything is written, but content the API server refuses
	// fails the write of that object, after others may have been written.
	// For a first install, which has nothing installed to protect, and
	// whose objects the caller has recorded (in the inventory) before the
	// write.
	Direct bool
	// Collisions, when set, make Apply check existing objects against
	// them before the first write; a refused object fails the plan with
	// CodeCollision and nothing is applied. Nil takes every existing
	// object.
	Collisions *Collisions
	// Hooks is which of the plan's hooks Apply runs: objects whose
	// helm.sh/hook annotation names pre-install (pre-upgrade) are written
	// before the other objects and post-install (post-upgrade) after
	// them, in helm.sh/hook-weight order; a Job or Pod among them is
	// waited for until it succeeds. Delete policies are honoured:
	// before-hook-creation (the default) deletes a hook left by an
	// earlier revision before it is created again, hook-succeeded deletes
	// it once it succeeded, hook-failed once it failed. A hook that fails
	// (or does not finish within Options.HookTimeout) fails the plan with
	// CodeHookFailed. With HooksNone (the zero value), or for hooks of
	// other events, hooks are not written at all. DryRun previews the
	// hooks Apply would run.
	Hooks HookRun
	// OnHookWait, when set, is called when Apply starts waiting for a
	// hook Job or Pod, and again whenever what blocks the hook changes,
	// so that a caller can say in its status what it waits for, and why
	// it may never finish, long before the wait times out. It is called
	// on the goroutine that called Apply.
	OnHookWait func(HookWait)
}
