package health

import (
	"math"

	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
)

// dynCost charges calls that are dispatched at run time by the size of
// what they touch.
//
// `self` is dynamic, so most calls in a probe (self.a + self.b,
// self.s.contains(x)) are not resolved to an overload when the expression
// is checked. CEL's default runtime cost only scales with size for resolved
// string and list overloads and charges 1 for everything else, so without
// this a comprehension concatenating large fields would allocate without
// bound while the cost stays tiny. Resolved overloads keep CEL's default
// cost.
type dynCost struct{}

var _ interpreter.ActualCostEstimator = dynCost{}

// CallCost implements interpreter.ActualCostEstimator.
func (dynCost) CallCost(function, overloadID string, args []ref.Val, result ref.Val) *uint64 {
	if overloadID != "" {
		return nil
	}
	var size uint64
	for _, a := range args {
		size += sizeOf(a)
	}
	size += sizeOf(result)
	cost := 1 + uint64(math.Ceil(float64(size)*common.StringTraversalCostFactor))
	if function == "matches" && len(args) == 2 {
		// Regular expressions cost the product of text and pattern.
		cost *= 1 + uint64(math.Ceil(float64(sizeOf(args[1]))*common.RegexStringLengthCostFactor))
	}
	return &cost
}

// sizeOf is the size of a string, bytes, list or map value, else 1.
func sizeOf(v ref.Val) uint64 {
	if s, ok := v.(traits.Sizer); ok {
		if n, ok := s.Size().(types.Int); ok && n > 0 {
			return uint64(n)
		}
	}
	return 1
}
