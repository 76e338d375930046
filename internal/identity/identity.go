// Package identity says who a BundleDeployment's objects are read and written
// as, and hands out API clients that act as that identity: the manager
// itself, or a ServiceAccount the manager impersonates.
package identity

import (
	"container/list"
	"fmt"
	"net/http"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/internal/apply"
)

// Identity is who installs a BundleDeployment: a ServiceAccount, or (the
// zero value) the manager itself.
type Identity struct {
	// Namespace and Name of the ServiceAccount; both empty for the manager.
	Namespace, Name string
}

// Manager is the manager's own identity.
var Manager = Identity{}

// ServiceAccount returns the identity of ServiceAccount namespace/name.
func ServiceAccount(namespace, name string) Identity {
	return Identity{Namespace: namespace, Name: name}
}

// IsManager reports whether i is the manager's own identity.
func (i Identity) IsManager() bool { return i == Manager }

// UserName is the user name the API server knows i by; "" for the manager.
func (i Identity) UserName() string {
	if i.IsManager() {
		return ""
	}
	return serviceaccount.MakeUsername(i.Namespace, i.Name)
}

// String names i for messages.
func (i Identity) String() string {
	if i.IsManager() {
		return "the manager"
	}
	return fmt.Sprintf("ServiceAccount %s/%s", i.Namespace, i.Name)
}

// Clients act as one identity. Those a Pool builds for a ServiceAccount
// are not caches: every read goes to the API server. The manager's are the
// ones the Pool was given.
type Clients struct {
	// Client reads and writes typed and unstructured objects.
	Client client.Client
	// Metadata reads and writes objects' metadata only.
	Metadata *apply.MetadataClient
}

// DefaultSize is how many identities' clients a Pool keeps.
const DefaultSize = 256

// Pool hands out Clients per identity. A ServiceAccount's clients
// impersonate it over the manager's HTTP transport, so connections are
// shared, and use the manager's RESTMapper, so nothing is discovered per
// identity: each costs a few small structures. The pool keeps at most Size
// identities (the least recently used is dropped, and built again when
// needed), so it does not grow with the number of ServiceAccounts ever
// used.
type Pool struct {
	cfg     *rest.Config
	base    *http.Client
	scheme  *runtime.Scheme
	mapper  meta.RESTMapper
	manager *Clients
	size    int

	mu      sync.Mutex
	order   *list.List // of Identity, most recently used first
	entries map[Identity]*entry
}

type entry struct {
	clients *Clients
	elem    *list.Element
}

// NewPool returns a Pool. cfg and base are the manager's REST config and
// HTTP client (impersonation is layered over base's transport); manager is
// what For returns for the manager's own identity; size < 1 means
// DefaultSize.
func NewPool(cfg *rest.Config, base *http.Client, scheme *runtime.Scheme, mapper meta.RESTMapper, manager *Clients, size int) *Pool {
	if size < 1 {
		size = DefaultSize
	}
	return &Pool{cfg: cfg, base: base, scheme: scheme, mapper: mapper, manager: manager, size: size,
		order: list.New(), entries: map[Identity]*entry{}}
}

// For returns the clients acting as id.
func (p *Pool) For(id Identity) (*Clients, error) {
	if id.IsManager() {
		return p.manager, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.entries[id]; ok {
		p.order.MoveToFront(e.elem)
		return e.clients, nil
	}
	c, err := p.build(id)
	if err != nil {
		return nil, err
	}
	p.entries[id] = &entry{clients: c, elem: p.order.PushFront(id)}
	for p.order.Len() > p.size {
		oldest := p.order.Back()
		p.order.Remove(oldest)
		delete(p.entries, oldest.Value.(Identity))
	}
	return c, nil
}

// Forget drops id's clients (its BundleDeployments are gone).
func (p *Pool) Forget(id Identity) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.entries[id]; ok {
		p.order.Remove(e.elem)
		delete(p.entries, id)
	}
}

// Len is how many identities' clients the pool holds.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.entries)
}

func (p *Pool) build(id Identity) (*Clients, error) {
	imp := transport.ImpersonationConfig{UserName: id.UserName()}
	hc := &http.Client{
		Transport: transport.NewImpersonatingRoundTripper(imp, p.base.Transport),
		Timeout:   p.base.Timeout,
	}
	// It can watch: the apply engine watches hook Jobs it waits for.
	c, err := client.NewWithWatch(p.cfg, client.Options{HTTPClient: hc, Scheme: p.scheme, Mapper: p.mapper})
	if err != nil {
		return nil, fmt.Errorf("creating client for %s: %w", id, err)
	}
	md, err := apply.NewMetadataClient(p.cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("creating metadata client for %s: %w", id, err)
	}
	return &Clients{Client: c, Metadata: md}, nil
}
