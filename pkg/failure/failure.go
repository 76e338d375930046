// Package failure carries an error with a user-facing reason — a condition
// reason of api/v1alpha2 and a message naming the file or object at fault —
// from where it is found to the condition that reports it.
//
// What happens next is decided in one place, PolicyOf: a reason the world
// can fix by itself (a kind or namespace not there yet, permissions an
// admin can grant) is Retry — tried again with backoff, and on the event
// that fixes it; every other reason is Hold — the content or the spec is
// wrong, and the revision waits for a spec change or a user's retry.
// Errors without a reason (API server errors, timeouts, conflicts) are
// returned by the reconcile and retried with the controller's backoff.
package failure

import (
	"errors"
	"fmt"
)

// Error is a failure with a condition reason; see PolicyOf for whether it
// is retried.
type Error struct {
	// Reason is the condition reason, a CamelCase constant of api/v1alpha2.
	Reason string
	// Message names the file or object at fault and the rule it broke.
	Message string
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// New returns a terminal failure with reason and a formatted message.
func New(reason, format string, args ...any) *Error {
	return &Error{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// As returns the terminal failure in err's chain, or nil.
func As(err error) *Error {
	var f *Error
	if errors.As(err, &f) {
		return f
	}
	return nil
}

// Reason returns the reason of the terminal failure in err's chain, or
// fallback when err is not one.
func Reason(err error, fallback string) string {
	if f := As(err); f != nil {
		return f.Reason
	}
	return fallback
}
