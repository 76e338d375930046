package failure

import (
	"github.com/rukpak/rukpak/api/v1alpha2"
)

// Policy is what happens to a revision that failed with a reason.
type Policy string

const (
	// Hold: the content or the spec itself is wrong. The revision is
	// recorded as failed and not tried again until the spec changes or a
	// user asks for a retry (rukpakctl retry).
	Hold Policy = "Hold"
	// Retry: the world can fix it by itself (a CRD or namespace that is
	// not there yet, RBAC an admin has yet to grant). The revision is not
	// recorded as failed; it is tried again with backoff (after a second,
	// then twice as long each time, at most two minutes apart), and at
	// once on the event that fixes it where one is watched.
	Retry Policy = "Retry"
)

// retryReasons are the reasons of failures the world can fix. Every other
// reason of a *Error is Hold. Errors that are not a *Error at all (API
// server errors and timeouts, conflicts, an unreachable webhook) never get
// this far: the reconcile returns them and is retried with the
// controller's backoff.
var retryReasons = map[string]bool{
	// An object's kind is not served yet: its CRD or APIService is
	// installed by someone else, maybe a moment later.
	v1alpha2.ReasonUnknownKind: true,
	// An object's namespace does not exist yet.
	v1alpha2.ReasonNamespaceNotFound: true,
	// The install identity lacks permissions an admin can grant.
	v1alpha2.ReasonMissingPermissions: true,
	// The requester lacks rights an admin can grant.
	v1alpha2.ReasonNotAuthorized: true,
	// The revision is applied but an object it no longer has could not be
	// deleted (a finalizer, a webhook, the API server): deleting it again
	// later usually works, and nothing about the revision is wrong.
	v1alpha2.ReasonPruneFailed: true,
}

// PolicyOf returns the policy for a failure with reason.
func PolicyOf(reason string) Policy {
	if retryReasons[reason] {
		return Retry
	}
	return Hold
}
