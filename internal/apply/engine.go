package apply

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/internal/inventory"
)

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
