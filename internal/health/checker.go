package health

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// Result is the health of one object.
type Result struct {
	// Healthy is true when every check of the object passed.
	Healthy bool
	// Reason names the first check that failed, e.g. "3/5 replicas
	// available", "condition Ready is False: <message>" or a probe's
	// message. It is empty when Healthy is true.
	Reason string
}

// healthy returns a passing Result.
func healthy() Result { return Result{Healthy: true} }

// unhealthy returns a failing Result with a formatted reason.
func unhealthy(format string, args ...any) Result {
	return Result{Reason: fmt.Sprintf(format, args...)}
}

// Checker evaluates built-in probes and the user's CEL probes. Compile once
// per BundleDeployment spec (see Cache), evaluate many times; it is safe for
// concurrent use. A nil Checker runs the built-in probes only.
type Checker struct {
	probes []*userProbe
	// selected are the group/kinds some user probe selects.
	selected map[schema.GroupKind]bool
}

// NewChecker compiles the user's probes. A CEL expression that does not
// compile, or whose type is not bool, is a *failure.Error with reason
// v1alpha2.ReasonInvalidConfig naming the probe's index; one whose
// estimated worst-case cost is over the limit is a *failure.Error with
// reason v1alpha2.ReasonProbeTooExpensive naming the probe, its estimate and
// the limit.
func NewChecker(probes []v1alpha2.Probe) (*Checker, error) {
	c := &Checker{selected: make(map[schema.GroupKind]bool, len(probes))}
	for i, p := range probes {
		up, err := compileProbe(i, p)
		if err != nil {
			return nil, err
		}
		c.probes = append(c.probes, up)
		c.selected[schema.GroupKind{Group: p.Selector.Group, Kind: p.Selector.Kind}] = true
	}
	return c, nil
}

// Check reports whether obj is healthy: its built-in probe and every user
// probe that selects it must pass. A nil obj (not found) is unhealthy.
func (c *Checker) Check(obj *unstructured.Unstructured) Result {
	if obj == nil || obj.Object == nil {
		return unhealthy("object not found")
	}
	if r := builtinProbe(obj); !r.Healthy {
		return r
	}
	if c == nil {
		return healthy()
	}
	for _, p := range c.probes {
		if !p.matches(obj) {
			continue
		}
		if r := p.eval(obj); !r.Healthy {
			return r
		}
	}
	return healthy()
}

// Relevant reports whether objects of this group/kind need to be read to
// judge health at all. It is false for kinds without health semantics
// (ConfigMap, Secret, RBAC, Service, ...) that no user probe selects, and
// true for kinds with a built-in probe, kinds a user probe selects and
// unknown kinds, which may carry a Ready or Available condition.
func (c *Checker) Relevant(gk schema.GroupKind) bool {
	if c != nil && c.selected[gk] {
		return true
	}
	return !noHealth[gk]
}
