package bundledeployment

import (
	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/pkg/failure"
)

// applyReason is the condition reason of an apply engine failure of code.
func applyReason(code apply.Code) string {
	switch code {
	case apply.CodeInvalidContent:
		return v1alpha2.ReasonInvalidContent
	case apply.CodeUnknownKind:
		return v1alpha2.ReasonUnknownKind
	case apply.CodeNamespaceNotFound:
		return v1alpha2.ReasonNamespaceNotFound
	case apply.CodeRefused:
		return v1alpha2.ReasonValidationFailed
	case apply.CodeForbidden:
		return v1alpha2.ReasonMissingPermissions
	case apply.CodeImmutable:
		return v1alpha2.ReasonImmutableFieldChanged
	case apply.CodeCollision:
		return v1alpha2.ReasonCollision
	case apply.CodeHookFailed:
		return v1alpha2.ReasonHookFailed
	}
	// CodeWriteFailed, and any code added later.
	return v1alpha2.ReasonApplyFailed
}

// applyFailure gives the apply engine's failure in err's chain, if any, the
// condition reason of its code: it returns err with a failure.Error of that
// reason and the engine's message first in its chain, so that conditions,
// events and the retry policy (failure.PolicyOf) read it as any other
// failure. err's message and the rest of its chain are preserved. Every error of
// the engine that ends in a condition passes through here, where the
// controller calls Prepare and Apply.
func applyFailure(err error) error {
	ae := apply.As(err)
	if ae == nil {
		return err
	}
	return &reasoned{err: err, reason: &failure.Error{Reason: applyReason(ae.Code), Message: ae.Message}}
}

// reasoned is an error of the apply engine with its condition reason.
type reasoned struct {
	err    error
	reason *failure.Error
}

// Error returns the engine's error's message.
func (r *reasoned) Error() string { return r.err.Error() }

// Unwrap returns the failure with the reason, then the engine's error.
func (r *reasoned) Unwrap() []error { return []error{r.reason, r.err} }

// collisionPolicy is the apply engine's policy for spec.collisionProtection.
func collisionPolicy(p v1alpha2.CollisionProtection) apply.CollisionPolicy {
	switch p {
	case v1alpha2.CollisionProtectionIfNoController:
		return apply.CollisionIfNoController
	case v1alpha2.CollisionProtectionNone:
		return apply.CollisionNone
	}
	return apply.CollisionPrevent
}
