package health

import (
	"fmt"
	"math"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// Limits of the static cost estimate, priced the way the API server prices
// a CRD's x-kubernetes-validations rules: CEL's checker estimates the
// worst-case cost of an expression from the largest sizes its inputs can
// have, and a rule over the limit is refused before it ever runs.
const (
	// maxObjectSize is the largest object the API server stores (etcd's
	// default request limit, 1.5 MiB). `self` is always such an object, so
	// no string in it is longer and no list or map in it has more than half
	// as many entries (each takes at least two bytes: "0,").
	maxObjectSize = 3 * 512 * 1024
	// maxEstimatedCost is the highest worst-case cost a probe may have:
	// the API server's limit for one x-kubernetes-validations rule
	// (StaticEstimatedCostLimit). It is ten times costLimit, the bound of
	// one evaluation, as in the API server: the estimate is a worst case
	// that real objects rarely approach, and costLimit still holds.
	maxEstimatedCost = 10_000_000
)

// estimatedCostLimit is maxEstimatedCost, a variable so that tests can
// check the run-time bounds on expressions the estimate would refuse.
var estimatedCostLimit uint64 = maxEstimatedCost

// objectSizes tells CEL's cost estimator how large the values of a probe
// can be. Every value not computed by the expression itself comes from
// `self`, so its size is bounded by maxObjectSize; CEL computes the sizes
// of literals and of what functions return from these.
type objectSizes struct{}

var _ checker.CostEstimator = objectSizes{}

// EstimateSize implements checker.CostEstimator.
func (objectSizes) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	switch n.Type().Kind() {
	case types.StringKind, types.BytesKind:
		return &checker.SizeEstimate{Min: 0, Max: maxObjectSize}
	case types.ListKind, types.MapKind, types.DynKind, types.AnyKind:
		// A dynamic value (almost every value of `self`) is priced as a
		// list of the most entries an object holds. It may be a string
		// of twice as many bytes instead, but CEL prices a byte of a
		// string at a tenth of an entry of a list (traversal cost factor
		// 0.1), so the list is the costlier reading. What a probe builds
		// from strings is bounded at run time (see sizeGuard).
		return &checker.SizeEstimate{Min: 0, Max: maxObjectSize / 2}
	default:
		return nil
	}
}

// EstimateCallCost implements checker.CostEstimator: CEL's own estimates
// (and those of the string extensions) price every function a probe can
// call.
func (objectSizes) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// checkCost refuses the i-th probe, p, when the worst-case cost of its
// checked expression exceeds maxEstimatedCost.
func checkCost(env *cel.Env, ast *cel.Ast, i int, p v1alpha2.Probe) error {
	est, err := env.EstimateCost(ast, objectSizes{})
	if err != nil {
		return failure.New(v1alpha2.ReasonProbeTooExpensive,
			"health probe %d (%s): cannot estimate the cost of %q: %v", i, describeSelector(p.Selector), shorten(p.CEL, maxShownExpression), err)
	}
	if est.Max <= estimatedCostLimit {
		return nil
	}
	return failure.New(v1alpha2.ReasonProbeTooExpensive,
		"health probe %d (%s): %q has an estimated worst-case cost of %s on objects of up to 1.5 MiB, more than the limit of %d",
		i, describeSelector(p.Selector), shorten(p.CEL, maxShownExpression), formatCost(est.Max), estimatedCostLimit)
}

// formatCost writes an estimated cost, with how many times the limit it is.
func formatCost(c uint64) string {
	if c == math.MaxUint64 {
		return "unbounded"
	}
	return fmt.Sprintf("%d (%.0fx the limit)", c, math.Ceil(float64(c)/float64(estimatedCostLimit)))
}

// describeSelector names the objects a probe selects, e.g. "apps/Deployment
// web" or "ConfigMap".
func describeSelector(s v1alpha2.ProbeSelector) string {
	out := s.Kind
	if s.Group != "" {
		out = s.Group + "/" + s.Kind
	}
	if s.Name != "" {
		out += " " + s.Name
	}
	return out
}
