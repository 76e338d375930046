package health

import (
	"math"
	"sync/atomic"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
)

// meterVar is the activation variable that carries an evaluation's meter.
// A name starting with '@' cannot be written in an expression.
const meterVar = "@rukpak.meter"

// meter is the cost budget of one evaluation.
//
// CEL's own run-time cost tracking (cel.CostLimit) is not used: in the
// cel-go version rukpak builds with, it keeps every value a comprehension
// step produces on a stack it searches linearly, so a probe linear in a
// list costs time quadratic in its length (6 s for `l.all(x, true)` over
// 80,000 entries, 6 ms without tracking): a cheap probe over a large list
// would burn the evaluation timeout on every check. The meter charges in
// CEL's units, in constant time per step.
type meter struct {
	used  atomic.Uint64
	limit uint64
}

// charge adds n to the meter and cancels the evaluation when that passes
// the limit.
func (m *meter) charge(n uint64) {
	if m.used.Add(n) > m.limit {
		panic(interpreter.EvalCancelledError{
			Cause:   interpreter.CostLimitExceeded,
			Message: "operation cancelled: actual cost limit exceeded",
		})
	}
}

// valueCost is what a call or literal that produced v costs: one step,
// plus a tenth of a unit per byte of a string or bytes value it built
// (CEL's traversal cost factor). Lists and maps cost one step, as in CEL:
// a comprehension appends to its result in place, and what a single call
// can build is bounded by sizeGuard.
func valueCost(v ref.Val) uint64 {
	cost := uint64(1)
	switch t := v.(type) {
	case types.String:
		cost += uint64(math.Ceil(float64(len(t)) * common.StringTraversalCostFactor))
	case types.Bytes:
		cost += uint64(math.Ceil(float64(len(t)) * common.StringTraversalCostFactor))
	}
	return cost
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

// metering is the program option that charges every attribute access,
// call and constructor of an evaluation to the meter in its activation.
// Constants are free, and comprehensions, && and || are charged through
// the steps they run, so every iteration costs at least one unit.
//
// Unlike CEL's tracker, the meter does not charge a call for scanning its
// inputs (s.contains(x) costs one step, not a tenth of len(s)): inputs are
// at most an object's size or what sizeGuard lets a call build, and the
// static estimate, which does price scans, refuses probes that repeat
// them over a list. The evaluation timeout is the backstop.
func metering() cel.ProgramOption {
	return cel.CustomDecoratorV2(func(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
		switch t := i.(type) {
		case interpreter.InterpretableConst:
			return i, nil
		case interpreter.InterpretableAttribute:
			return &meteredAttr{InterpretableAttribute: t}, nil
		case interpreter.InterpretableCall:
			return &meteredCall{InterpretableCall: t}, nil
		case interpreter.InterpretableConstructor:
			return &meteredConstructor{InterpretableConstructor: t}, nil
		default:
			return i, nil
		}
	})
}

// meterOf finds the meter of the evaluation a frame belongs to.
func meterOf(frame interpreter.Activation) *meter {
	if v, ok := frame.ResolveName(meterVar); ok {
		if m, ok := v.(*meter); ok {
			return m
		}
	}
	return nil
}

// exec runs i in frame and charges the meter for the value it produced.
func exec(i interpreter.InterpretableV2, frame *interpreter.ExecutionFrame) ref.Val {
	v := i.Exec(frame)
	if m := meterOf(frame); m != nil {
		m.charge(valueCost(v))
	}
	return v
}

// attrCost is what resolving an identifier or a selection costs, as in CEL.
const attrCost = common.SelectAndIdentCost

// meteredAttr is an attribute (identifier, selection, index) that is
// charged; it stays an attribute so that the planner can still extend it.
type meteredAttr struct {
	interpreter.InterpretableAttribute
}

// Exec implements interpreter.InterpretableV2.
func (a *meteredAttr) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	v := a.InterpretableAttribute.Exec(frame)
	if m := meterOf(frame); m != nil {
		m.charge(attrCost)
	}
	return v
}

// Eval implements interpreter.Interpretable.
func (a *meteredAttr) Eval(vars interpreter.Activation) ref.Val {
	return a.Exec(interpreter.AsFrame(vars))
}

// meteredCall is a function call that is charged.
type meteredCall struct {
	interpreter.InterpretableCall
}

// Exec implements interpreter.InterpretableV2.
func (c *meteredCall) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	return exec(c.InterpretableCall, frame)
}

// Eval implements interpreter.Interpretable.
func (c *meteredCall) Eval(vars interpreter.Activation) ref.Val {
	return c.Exec(interpreter.AsFrame(vars))
}

// meteredConstructor is a list, map or message literal that is charged.
type meteredConstructor struct {
	interpreter.InterpretableConstructor
}

// Exec implements interpreter.InterpretableV2.
func (c *meteredConstructor) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	return exec(c.InterpretableConstructor, frame)
}

// Eval implements interpreter.Interpretable.
func (c *meteredConstructor) Eval(vars interpreter.Activation) ref.Val {
	return c.Exec(interpreter.AsFrame(vars))
}
