package apply

import (
	"errors"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
)

// terminating reports whether a Forbidden error only says the namespace is
// being deleted, which passes.
func terminating(err error) bool { return strings.Contains(err.Error(), "being terminated") }

// classify returns a terminal failure for errors that retrying the same
// objects will not fix (the object is invalid, its kind is not served, its
// namespace does not exist), or nil for transient ones.
func classify(err error, code Code) *Error {
	if f := As(err); f != nil {
		return f
	}
	if meta.IsNoMatchError(err) {
		return newError(CodeUnknownKind, "%v", err)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return nil
	}
	switch {
	case apierrors.IsNotFound(err) && namespaceMissing(status):
		return newError(CodeNamespaceNotFound, "%v", err)
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsNotFound(err),
		apierrors.IsRequestEntityTooLargeError(err), apierrors.IsMethodNotSupported(err),
		apierrors.IsUnsupportedMediaType(err), apierrors.IsNotAcceptable(err):
		return newError(code, "%v", err)
	case apierrors.IsForbidden(err) && !terminating(err):
		return newError(code, "%v", err)
	case apierrors.IsInternalError(err) && strings.Contains(err.Error(), "failed to create typed patch object"):
		// Server-side apply cannot merge the object: its content
		// breaks the schema's list or map rules (such as two
		// entries with the same key), however often it is sent.
		return newError(code, "%v", err)
	}
	return nil
}

// namespaceMissing reports whether a NotFound status is about the
// object's namespace rather than the object.
func namespaceMissing(status apierrors.APIStatus) bool {
	d := status.Status().Details
	return d != nil && d.Kind == "namespaces"
}

// firstFailure returns the error to report of errs, the failed writes of
// one stage: a missing permission first (a refusal that follows from it,
// such as a binding of a role that could not be written, is its
// consequence), then any other failure, then the first error.
func firstFailure(errs []error) error {
	var other error
	for _, err := range errs {
		f := As(err)
		switch {
		case f != nil && f.Code == CodeForbidden:
			return err
		case f != nil && other == nil:
			other = err
		}
	}
	if other != nil {
		return other
	}
	return errs[0]
}
