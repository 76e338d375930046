package apply

import (
	"errors"
	"fmt"

	"github.com/rukpak/rukpak/internal/inventory"
)

// Code says what kind of failure an Error is. Callers turn it into their
// own words (a condition reason, say) and decide whether to retry.
type Code int

// The codes. Each is terminal for the plan as it stands: writing the same
// objects again will not succeed until something changes (the bundle, the
// cluster, or the identity's permissions).
const (
	// CodeInvalidContent: an object of the bundle cannot be applied as
	// written (it appears twice, cannot be encoded, or is a
	// CustomResourceDefinition without spec.group or spec.names.kind).
	CodeInvalidContent Code = iota + 1
	// CodeUnknownKind: the cluster does not serve an object's kind, and
	// no CustomResourceDefinition of the bundle defines it; or the API
	// server answered a write, a dry-run or a list of a kind the
	// RESTMapper mapped that it does not serve it (any more).
	CodeUnknownKind
	// CodeNamespaceNotFound: an object's namespace does not exist.
	CodeNamespaceNotFound
	// CodeRefused: the API server refused an object when it was
	// validated (the dry-run, or the write of a Direct apply).
	CodeRefused
	// CodeForbidden: the engine's identity may not write an object, or
	// may not grant what a role of the bundle holds.
	CodeForbidden
	// CodeImmutable: an object cannot be updated in place (a field that
	// cannot change does) and may not be replaced.
	CodeImmutable
	// CodeCollision: an object exists and the plan may not take it over
	// (see Collisions).
	CodeCollision
	// CodeWriteFailed: the API server refused a write its validation
	// had passed, or a CustomResourceDefinition's names.
	CodeWriteFailed
	// CodeHookFailed: a hook Job or Pod failed, was deleted before it
	// finished, or did not finish within Options.HookTimeout.
	CodeHookFailed
)

// codeNames are the codes' names, for String.
var codeNames = map[Code]string{
	CodeInvalidContent:    "InvalidContent",
	CodeUnknownKind:       "UnknownKind",
	CodeNamespaceNotFound: "NamespaceNotFound",
	CodeRefused:           "Refused",
	CodeForbidden:         "Forbidden",
	CodeImmutable:         "Immutable",
	CodeCollision:         "Collision",
	CodeWriteFailed:       "WriteFailed",
	CodeHookFailed:        "HookFailed",
}

// String names the code.
func (c Code) String() string {
	if name, ok := codeNames[c]; ok {
		return name
	}
	return fmt.Sprintf("Code(%d)", int(c))
}

// Error is a failure the engine understood: which kind (Code) and a
// message naming the object at fault and the rule it broke. Errors that
// are not an Error (the API server unreachable, a timeout, a conflict)
// are transient: trying again may work.
type Error struct {
	// Code is what kind of failure it is.
	Code Code
	// Message names the object at fault and what is wrong with it; for
	// an Error that refuses a plan for some of its objects, a headline
	// and Refusals' String.
	Message string
	// Refusals are every object a plan was refused for, sorted by
	// message, when the Error refuses it for some of its objects: those
	// its validation refused (CodeForbidden, CodeUnknownKind,
	// CodeImmutable, CodeRefused), and the collisions (CodeCollision).
	// Empty for other failures.
	Refusals Refusals
}

// Held returns the objects of a CodeCollision refused because another
// owner's installed revision has them (Refusal.HeldBy), so that the
// caller can ask that owner to hand them over when it drops them.
func (e *Error) Held() []Held {
	var out []Held
	for _, r := range e.Refusals {
		if r.HeldBy != "" {
			out = append(out, Held{ID: r.ID, By: r.HeldBy})
		}
	}
	return out
}

// Held is an object a plan was refused because another owner holds it.
type Held struct {
	// ID names the object.
	ID inventory.ID
	// By names the owner (a BundleDeployment) that holds it.
	By string
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// newError returns an Error with code and a formatted message.
func newError(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// As returns the first Error in err's chain, or nil.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// CodeOf returns the code of the first Error in err's chain, or 0 when
// there is none.
func CodeOf(err error) Code {
	if e := As(err); e != nil {
		return e.Code
	}
	return 0
}
