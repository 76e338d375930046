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

// classify returns a terminal failure for errors of a write or a dry-run
// of an object that retrying the same objects will not fix (the object is
// invalid, its kind is not served, its namespace does not exist), or nil
// for transient ones. code is the failure of a refusal.
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
	case kindNotServed(err, status):
		return newError(CodeUnknownKind, "%s: %v", notServed, err)
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err),
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

// notServed is what a failure of CodeUnknownKind that the API server
// answered says first.
const notServed = "its kind is not served by the cluster"

// kindNotServed reports whether err, the answer to a write, a dry-run or a
// list of objects of one kind, says that the API server does not serve
// that kind (any more), although the RESTMapper mapped it: a NotFound that
// is not about the object's namespace (a server-side apply, a create and a
// list never answer NotFound about the object itself; the API server
// answers a resource it does not serve, such as one whose CRD was deleted
// or whose APIService is gone, with a bare 404), or a create refused
// because the kind's CustomResourceDefinition is being deleted.
func kindNotServed(err error, status apierrors.APIStatus) bool {
	switch {
	case apierrors.IsNotFound(err):
		return !namespaceMissing(status)
	case apierrors.IsMethodNotSupported(err):
		return strings.Contains(status.Status().Message, "custom resource definition is terminating")
	}
	return false
}

// classifyAnswer is classify for the API server's answer to a write, a
// dry-run or a list of objects of a kind the plan mapped; an answer that
// the kind is not served is told to Options.KindNotServed.
func (e *Engine) classifyAnswer(err error, code Code) *Error {
	f := classify(err, code)
	if f != nil && f.Code == CodeUnknownKind && As(err) == nil && !meta.IsNoMatchError(err) && e.opts.KindNotServed != nil {
		e.opts.KindNotServed()
	}
	return f
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
