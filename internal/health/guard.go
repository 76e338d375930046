package health

import (
	"strings"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/functions"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
)

// Limits on what one call of a probe may build. CEL charges a call's cost
// after it returns, so the cost limit alone cannot stop one call from
// allocating gigabytes first (`s.replace('a', s)` on a 900 kB string builds
// ~800 GB). The functions that can build a value larger than their inputs
// are therefore checked before they run.
const (
	// maxBuiltString is the longest string or bytes one call may build:
	// twice the largest object, enough to join two of its fields.
	maxBuiltString = 2 * maxObjectSize
	// maxBuiltList is the most entries one call may put in a list: as many
	// as the largest object can hold.
	maxBuiltList = maxObjectSize / 2
	// renderedScalar bounds how `format` renders one number, bool, null,
	// type, duration or timestamp: %f of the largest double has 309 digits
	// before the point and the string extensions allow 100 after it.
	renderedScalar = 512
)

// builtSize returns, for a call of a function that can build a large value,
// the size of the value it would build from args (in bytes for strings and
// bytes, in entries for lists), the kind of value it is and the limit for
// it. ok is false when the call builds nothing large (or its arguments are
// of types the function will refuse anyway).
type builtSize func(args []ref.Val) (size uint64, what string, limit uint64, ok bool)

// sizeGuards are the functions checked before they run, by name: the
// check holds for every overload and for dynamic dispatch alike.
var sizeGuards = map[string]builtSize{
	"_+_":           concatSize,
	"replace":       replaceSize,
	"join":          joinSize,
	"format":        formatSize,
	"strings.quote": quoteSize,
	"split":         splitSize,
}

func stringResult(n uint64) (uint64, string, uint64, bool) {
	return n, "a string of %d bytes", maxBuiltString, true
}

func concatSize(args []ref.Val) (uint64, string, uint64, bool) {
	if len(args) != 2 {
		return 0, "", 0, false
	}
	switch a := args[0].(type) {
	case types.String:
		if b, ok := args[1].(types.String); ok {
			return stringResult(uint64(len(a)) + uint64(len(b)))
		}
	case types.Bytes:
		if b, ok := args[1].(types.Bytes); ok {
			return uint64(len(a)) + uint64(len(b)), "a value of %d bytes", maxBuiltString, true
		}
	case traits.Lister:
		if b, ok := args[1].(traits.Lister); ok {
			return sizeOf(a) + sizeOf(b), "a list of %d entries", maxBuiltList, true
		}
	}
	return 0, "", 0, false
}

func replaceSize(args []ref.Val) (uint64, string, uint64, bool) {
	if len(args) < 3 {
		return 0, "", 0, false
	}
	s, ok1 := args[0].(types.String)
	old, ok2 := args[1].(types.String)
	repl, ok3 := args[2].(types.String)
	if !ok1 || !ok2 || !ok3 || len(repl) <= len(old) {
		return 0, "", 0, false
	}
	var n uint64
	if old == "" {
		n = uint64(utf8.RuneCountInString(string(s))) + 1
	} else {
		n = uint64(strings.Count(string(s), string(old)))
	}
	if len(args) == 4 {
		if limit, ok := args[3].(types.Int); ok && limit >= 0 && uint64(limit) < n {
			n = uint64(limit)
		}
	}
	return stringResult(uint64(len(s)) + n*uint64(len(repl)-len(old)))
}

func joinSize(args []ref.Val) (uint64, string, uint64, bool) {
	if len(args) < 1 {
		return 0, "", 0, false
	}
	list, ok := args[0].(traits.Lister)
	if !ok {
		return 0, "", 0, false
	}
	var sep uint64
	if len(args) == 2 {
		if s, ok := args[1].(types.String); ok {
			sep = uint64(len(s))
		}
	}
	var total uint64
	n := sizeOf(list)
	for it := list.Iterator(); it.HasNext() == types.True; {
		if s, ok := it.Next().(types.String); ok {
			total += uint64(len(s))
		}
	}
	if n > 0 {
		total += (n - 1) * sep
	}
	return stringResult(total)
}

func formatSize(args []ref.Val) (uint64, string, uint64, bool) {
	if len(args) != 2 {
		return 0, "", 0, false
	}
	f, ok := args[0].(types.String)
	if !ok {
		return 0, "", 0, false
	}
	list, ok := args[1].(traits.Lister)
	if !ok {
		return 0, "", 0, false
	}
	n := uint64(len(f))
	for it := list.Iterator(); it.HasNext() == types.True; {
		n += rendered(it.Next(), false)
	}
	return n, "a string of up to %d bytes", maxBuiltString, true
}

// rendered bounds the length of v as `format` writes it: a string or bytes
// argument at most doubled (%x), one inside a list or map at most tripled
// (quoted, with invalid UTF-8 as U+FFFD), containers as their entries plus
// separators, anything else renderedScalar.
func rendered(v ref.Val, nested bool) uint64 {
	switch t := v.(type) {
	case types.String:
		if nested {
			return 3*uint64(len(t)) + 2
		}
		return 2 * uint64(len(t))
	case types.Bytes:
		if nested {
			return 4*uint64(len(t)) + 3
		}
		return 2 * uint64(len(t))
	case traits.Mapper:
		out := uint64(2)
		for it := t.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			out += rendered(k, true) + rendered(t.Get(k), true) + 4
		}
		return out
	case traits.Lister:
		out := uint64(2)
		for it := t.Iterator(); it.HasNext() == types.True; {
			out += rendered(it.Next(), true) + 2
		}
		return out
	default:
		return renderedScalar
	}
}

func quoteSize(args []ref.Val) (uint64, string, uint64, bool) {
	if len(args) != 1 {
		return 0, "", 0, false
	}
	s, ok := args[0].(types.String)
	if !ok {
		return 0, "", 0, false
	}
	// An invalid byte becomes U+FFFD, three bytes.
	return 3*uint64(len(s)) + 2, "a string of up to %d bytes", maxBuiltString, true
}

func splitSize(args []ref.Val) (uint64, string, uint64, bool) {
	if len(args) < 2 {
		return 0, "", 0, false
	}
	s, ok1 := args[0].(types.String)
	sep, ok2 := args[1].(types.String)
	if !ok1 || !ok2 {
		return 0, "", 0, false
	}
	var n uint64
	if sep == "" {
		n = uint64(utf8.RuneCountInString(string(s)))
	} else {
		n = uint64(strings.Count(string(s), string(sep))) + 1
	}
	if len(args) == 3 {
		if limit, ok := args[2].(types.Int); ok && limit >= 0 && uint64(limit) < n {
			n = uint64(limit)
		}
	}
	return n, "a list of %d entries", maxBuiltList, true
}

// sizeGuard is a program option that checks the calls of sizeGuards before
// they run: a call that would build a value over its limit fails with an
// error saying so instead of allocating it.
func sizeGuard(env *cel.Env) (cel.ProgramOption, error) {
	impls := map[string]*functions.Overload{}
	for name, decl := range env.Functions() {
		if sizeGuards[name] == nil {
			continue
		}
		bindings, err := decl.Bindings()
		if err != nil {
			return nil, err
		}
		for _, b := range bindings {
			impls[b.Operator] = b
		}
	}
	return cel.CustomDecoratorV2(func(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
		call, ok := i.(interpreter.InterpretableCall)
		if !ok {
			return i, nil
		}
		size := sizeGuards[call.Function()]
		if size == nil {
			return i, nil
		}
		// The implementation the planner picked: the overload the checker
		// resolved, else dynamic dispatch by the function's name.
		impl := impls[call.OverloadID()]
		if impl == nil {
			impl = impls[call.Function()]
		}
		if impl == nil {
			return i, nil
		}
		op := operation(impl)
		fn := call.Function()
		return interpreter.NewCall(call.ID(), fn, call.OverloadID(), call.Args(), func(args ...ref.Val) ref.Val {
			if n, what, limit, ok := size(args); ok && n > limit {
				return types.NewErr("%s would build "+what+", more than the limit of %d", displayName(fn), n, limit)
			}
			return op(args...)
		}), nil
	}), nil
}

// operation returns the implementation of o for any number of arguments.
func operation(o *functions.Overload) functions.FunctionOp {
	return func(args ...ref.Val) ref.Val {
		switch {
		case len(args) == 1 && o.Unary != nil:
			return o.Unary(args[0])
		case len(args) == 2 && o.Binary != nil:
			return o.Binary(args[0], args[1])
		case o.Function != nil:
			return o.Function(args...)
		}
		return types.NewErr("no such overload: %s", o.Operator)
	}
}

// displayName is how a function is written in an expression.
func displayName(fn string) string {
	if fn == "_+_" {
		return "+"
	}
	return fn + "()"
}
