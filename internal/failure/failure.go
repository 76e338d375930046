// Package failure carries the reason of a failure that is the content's or
// the user's fault (bad YAML, a mutable ConfigMap, a kind the cluster does
// not serve) from where it is found to the condition that reports it.
//
// Such failures are terminal: retrying the same revision will not help, so
// controllers report them and wait for the spec or the content to change,
// instead of retrying with backoff as they do for every other error.
package failure

import (
	"errors"
	"fmt"
)

// Error is a terminal failure with a condition reason.
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
