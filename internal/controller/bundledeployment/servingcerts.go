package bundledeployment

import (
	"sync"
	"time"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/inventory"
	"github.com/rukpak/rukpak/internal/planner"
	"github.com/rukpak/rukpak/internal/servingcert"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ServingCerts fills in the serving certificates and CA bundles that
// formats ask for with package servingcert's annotations (registry+v1
// webhooks and aggregated APIs), and remembers when each
// BundleDeployment's certificates are next due, so that drift correction
// rotates them in time.
type ServingCerts struct {
	// Options are the certificates' lifetimes.
	Options servingcert.Options
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	mu   sync.Mutex
	next map[string]time.Time
}

// NewServingCerts returns ServingCerts with options o.
func NewServingCerts(o servingcert.Options) *ServingCerts {
	return &ServingCerts{Options: o}
}

// defaultServingCerts serves Reconcilers without ServingCerts.
var defaultServingCerts = NewServingCerts(servingcert.DefaultOptions())

// servingCerts returns r's ServingCerts.
func (r *Reconciler) servingCerts() *ServingCerts {
	if r.ServingCerts != nil {
		return r.ServingCerts
	}
	return defaultServingCerts
}

// now returns the current time.
func (c *ServingCerts) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// certs is how the plans of bd fill in the certificates their objects ask
// for (planner.FillCerts): the live certificate Secrets of the install
// namespace are read as bd's install identity and cached while valid, so that
// rendering again changes nothing until a certificate is due (see
// servingcert.Fill), and when they are next due is remembered. The private
// keys go only into those Secrets, which are applied as the install
// identity like every other object.
func (r *Reconciler) certs(bd *v1alpha2.BundleDeployment) planner.Certs {
	c := r.servingCerts()
	return planner.Certs{
		Reader: func() (client.Reader, error) {
			id, err := r.identityOf(bd)
			if err != nil {
				return nil, err
			}
			as, err := r.actorFor(id)
			if err != nil {
				return nil, err
			}
			return as.engine.Reader(), nil
		},
		Now:     c.now,
		Options: c.Options,
		Due:     func(next time.Time) { c.setNext(bd.Name, next) },
	}
}

// setNext records when name's certificates are next due.
func (c *ServingCerts) setNext(name string, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.next == nil {
		c.next = map[string]time.Time{}
	}
	c.next[name] = t
}

// forget drops what is known of name's certificates (it is gone).
func (c *ServingCerts) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.next, name)
}

// certsDue reports whether the BundleDeployment's certificates are due
// (their revision must be rendered again); if they are due later, the
// reconcile comes back then.
func (r *Reconciler) certsDue(s *scope) bool {
	c := r.servingCerts()
	c.mu.Lock()
	next, ok := c.next[s.bd.Name]
	c.mu.Unlock()
	if !ok || next.IsZero() {
		return false
	}
	if wait := next.Sub(c.now()); wait > 0 {
		s.requeueWithin(wait)
		return false
	}
	return true
}

// withRerendered adds to drifted the entries of plan that render
// differently from what was applied of st: the certificate Secrets and CA
// bundles a rotation or a regenerated certificate changed.
func (r *Reconciler) withRerendered(st *appliedState, plan *apply.Plan, drifted []inventory.ID) []inventory.ID {
	seen := make(map[inventory.ID]bool, len(drifted))
	for _, id := range drifted {
		seen[id] = true
	}
	for _, e := range plan.Entries() {
		if a := r.mem.object(st, e.ID); !seen[e.ID] && a.hash != "" && a.hash != e.Hash && !a.hook {
			drifted = append(drifted, e.ID)
		}
	}
	return drifted
}
