package manager

import (
	"fmt"
	"net/http"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// newMapper is the manager's RESTMapper: controller-runtime's dynamic
// one, with its RESTMapping answers kept, and made afresh when it is
// invalidated (rememberingMapper).
func newMapper(cfg *rest.Config, hc *http.Client) (*rememberingMapper, error) {
	renew := func() (meta.RESTMapper, error) {
		m, err := apiutil.NewDynamicRESTMapper(cfg, hc)
		if err != nil {
			return nil, fmt.Errorf("creating the RESTMapper: %w", err)
		}
		return m, nil
	}
	m, err := renew()
	if err != nil {
		return nil, err
	}
	return newRememberingMapper(m, renew), nil
}

// rememberingMapper is the manager's cache of the kinds the cluster
// serves: its RESTMapper, which the manager's client and cache, the apply
// engine, the install identities' clients, the review and lookup share.
//
// It keeps the mappings its RESTMapper found, until that mapper may have
// learned something new. Each RESTMapping answer of controller-runtime's
// dynamic mapper walks every group version it knows (allocating a NoMatch
// error for each that does not serve the kind): the cache asks it on
// every Get of a ConfigMap or Secret (is it namespaced?), 14 MB of
// allocations in 40 s of the 1000 × 10 install. The answers are the same
// as the mapper's: the dynamic mapper changes what it knows only while it
// answers a question (it loads discovery when it does not know a kind, or
// is asked one that it no longer finds), and every question not answered
// here is passed to it, so everything kept is forgotten whenever a
// question is passed on: a mapping is kept only when no other question
// was passed on while it was asked.
//
// What invalidates it: the dynamic mapper learns kinds it does not know
// by itself, but never forgets one it knows (a kind whose CRD was deleted,
// or whose APIService went away, stays mapped; a version dropped stays
// too). Invalidate forgets everything: the kept mappings and the dynamic
// mapper, which is made afresh (renew) for the next question and loads
// discovery again. The BundleDeployment controller calls it whenever a
// CustomResourceDefinition or an APIService is created, changed or
// deleted, and when the API server answers that it does not serve a kind
// that was mapped (apply.CodeUnknownKind).
type rememberingMapper struct {
	// renew makes a new RESTMapper, which knows nothing yet.
	renew func() (meta.RESTMapper, error)

	mu sync.Mutex
	// mapper answers the questions passed on.
	mapper meta.RESTMapper
	// stale is set by Invalidate: mapper is replaced (renew) before the
	// next question is passed on.
	stale bool
	// generation counts the questions passed on, and invalidations.
	generation uint64
	mappings   map[string]*meta.RESTMapping
}

var _ meta.RESTMapper = (*rememberingMapper)(nil)

// newRememberingMapper returns a rememberingMapper asking m, and a mapper
// renew makes once it is invalidated (m again when renew is nil).
func newRememberingMapper(m meta.RESTMapper, renew func() (meta.RESTMapper, error)) *rememberingMapper {
	return &rememberingMapper{mapper: m, renew: renew, mappings: map[string]*meta.RESTMapping{}}
}

// Invalidate forgets every mapping kept and every mapping the RESTMapper
// learned: the next question is answered from discovery as it is then.
func (m *rememberingMapper) Invalidate() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.generation++
	clear(m.mappings)
	m.stale = true
}

// passOn forgets everything kept and returns the mapper to ask (a new
// one, after Invalidate) and the generation of the question about to be
// passed on.
func (m *rememberingMapper) passOn() (meta.RESTMapper, uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.generation++
	clear(m.mappings)
	if m.stale && m.renew != nil {
		// On an error (none is expected: the first one was made from
		// the same configuration) the old mapper answers, and the next
		// question tries again.
		if fresh, err := m.renew(); err == nil {
			m.mapper, m.stale = fresh, false
		}
	}
	return m.mapper, m.generation
}

// RESTMapping answers as the mapper, from what it answered before when
// nothing was passed on to it since.
func (m *rememberingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	key := mappingKey(gk, versions)
	m.mu.Lock()
	if r, ok := m.mappings[key]; ok {
		m.mu.Unlock()
		return copyMapping(r), nil
	}
	m.mu.Unlock()
	mapper, gen := m.passOn()
	r, err := mapper.RESTMapping(gk, versions...)
	if err != nil {
		return r, err
	}
	m.mu.Lock()
	if m.generation == gen {
		m.mappings[key] = copyMapping(r)
	}
	m.mu.Unlock()
	return r, nil
}

// The other questions are passed on: the mapper may learn from them.

// KindFor answers as the mapper.
func (m *rememberingMapper) KindFor(resource schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	mapper, _ := m.passOn()
	return mapper.KindFor(resource)
}

// KindsFor answers as the mapper.
func (m *rememberingMapper) KindsFor(resource schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	mapper, _ := m.passOn()
	return mapper.KindsFor(resource)
}

// ResourceFor answers as the mapper.
func (m *rememberingMapper) ResourceFor(input schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	mapper, _ := m.passOn()
	return mapper.ResourceFor(input)
}

// ResourcesFor answers as the mapper.
func (m *rememberingMapper) ResourcesFor(input schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	mapper, _ := m.passOn()
	return mapper.ResourcesFor(input)
}

// RESTMappings answers as the mapper.
func (m *rememberingMapper) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	mapper, _ := m.passOn()
	return mapper.RESTMappings(gk, versions...)
}

// ResourceSingularizer answers as the mapper.
func (m *rememberingMapper) ResourceSingularizer(resource string) (string, error) {
	mapper, _ := m.passOn()
	return mapper.ResourceSingularizer(resource)
}

// mappingKey names a RESTMapping question.
func mappingKey(gk schema.GroupKind, versions []string) string {
	return strings.Join(append([]string{gk.Group, gk.Kind}, versions...), "/")
}

// copyMapping returns a copy of r, which callers may change.
func copyMapping(r *meta.RESTMapping) *meta.RESTMapping {
	if r == nil {
		return nil
	}
	out := *r
	return &out
}
