package apply

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/internal/inventory"
)

// Options configure an Engine.
type Options struct {
	// FieldManager owns every field rukpak applies.
	FieldManager string
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
}

// Engine applies and prunes objects.
type Engine struct {
	c      client.Client
	reader client.Reader
	meta   *MetadataClient
	mapper meta.RESTMapper
	opts   Options
}

// New returns an Engine. It applies and creates bundle objects through md
// (NewMetadataClient), so the API server answers each write with the
// object's metadata (as protobuf) rather than the whole object; it writes its own objects
// (namespaces) with c and reads managed objects with reader, which must not
// be a cache (managed objects may be of any kind; caching them all would
// cost memory); mapper tells which kinds the cluster serves and their scope.
func New(c client.Client, reader client.Reader, md *MetadataClient, mapper meta.RESTMapper, opts Options) *Engine {
	if opts.Concurrency < 1 {
		opts.Concurrency = 1
	}
	if opts.EstablishTimeout <= 0 {
		opts.EstablishTimeout = time.Minute
	}
	if opts.HookTimeout <= 0 {
		opts.HookTimeout = 5 * time.Minute
	}
	return &Engine{c: c, reader: reader, meta: md, mapper: mapper, opts: opts}
}

func (e *Engine) live() client.Reader { return e.reader }

// Reader reads managed objects from the API server, as the identity the
// engine acts as.
func (e *Engine) Reader() client.Reader { return e.reader }

// With returns a copy of e that reads and writes through other clients
// (those of another identity), sharing e's RESTMapper and options.
func (e *Engine) With(c client.Client, reader client.Reader, md *MetadataClient) *Engine {
	out := *e
	out.c, out.reader, out.meta = c, reader, md
	return &out
}

// Serves reports whether the cluster serves the kind of id now.
func (e *Engine) Serves(id inventory.ID) bool {
	gvk := id.GroupVersionKind()
	_, err := e.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	return err == nil
}

// Owner is who applies a plan: a BundleDeployment and its revision.
type Owner struct {
	// Name is the owning BundleDeployment.
	Name string
	// Revision is the Bundle being applied.
	Revision string
	// UID is the owning BundleDeployment's UID, recorded in the owner-uid
	// label so that its objects are told from those of a deleted
	// BundleDeployment of the same name.
	UID types.UID
}

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
