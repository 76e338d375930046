package manager

import (
	"net/http"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// newMapper is the manager's RESTMapper: controller-runtime's dynamic
// one, with its RESTMapping answers kept (rememberingMapper).
func newMapper(cfg *rest.Config, hc *http.Client) (meta.RESTMapper, error) {
	m, err := apiutil.NewDynamicRESTMapper(cfg, hc)
	if err != nil {
		return nil, err
	}
	return newRememberingMapper(m), nil
}

// rememberingMapper keeps the mappings its RESTMapper found, until that
// mapper may have learned something new. Each RESTMapping answer of
// controller-runtime's dynamic mapper walks every group version it knows
// (allocating a NoMatch error for each that does not serve the kind): the
// cache asks it on every Get of a ConfigMap or Secret (is it namespaced?),
// 14 MB of allocations in 40 s of the 1000 × 10 install.
//
// The answers are the same as the mapper's: the dynamic mapper changes
// what it knows only while it answers a question (it loads discovery when
// it does not know a kind, or is asked one that it no longer finds), and
// every question not answered here is passed to it, so everything kept is
// forgotten whenever a question is passed on: a mapping is kept only when
// no other question was passed on while it was asked.
type rememberingMapper struct {
	meta.RESTMapper

	mu sync.Mutex
	// generation counts the questions passed on.
	generation uint64
	mappings   map[string]*meta.RESTMapping
}

var _ meta.RESTMapper = (*rememberingMapper)(nil)

func newRememberingMapper(m meta.RESTMapper) *rememberingMapper {
	return &rememberingMapper{RESTMapper: m, mappings: map[string]*meta.RESTMapping{}}
}

// passOn forgets everything kept and returns the generation of the
// question about to be passed on.
func (m *rememberingMapper) passOn() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.generation++
	clear(m.mappings)
	return m.generation
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
	gen := m.passOn()
	r, err := m.RESTMapper.RESTMapping(gk, versions...)
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

func (m *rememberingMapper) KindFor(resource schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	m.passOn()
	return m.RESTMapper.KindFor(resource)
}

func (m *rememberingMapper) KindsFor(resource schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	m.passOn()
	return m.RESTMapper.KindsFor(resource)
}

func (m *rememberingMapper) ResourceFor(input schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	m.passOn()
	return m.RESTMapper.ResourceFor(input)
}

func (m *rememberingMapper) ResourcesFor(input schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	m.passOn()
	return m.RESTMapper.ResourcesFor(input)
}

func (m *rememberingMapper) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	m.passOn()
	return m.RESTMapper.RESTMappings(gk, versions...)
}

func (m *rememberingMapper) ResourceSingularizer(resource string) (string, error) {
	m.passOn()
	return m.RESTMapper.ResourceSingularizer(resource)
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
