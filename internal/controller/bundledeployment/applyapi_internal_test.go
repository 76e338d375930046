package bundledeployment

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/pkg/failure"
)

func TestApplyReason(t *testing.T) {
	tests := []struct {
		code apply.Code
		want string
	}{
		{apply.CodeInvalidContent, v1alpha2.ReasonInvalidContent},
		{apply.CodeUnknownKind, v1alpha2.ReasonUnknownKind},
		{apply.CodeNamespaceNotFound, v1alpha2.ReasonNamespaceNotFound},
		{apply.CodeRefused, v1alpha2.ReasonValidationFailed},
		{apply.CodeForbidden, v1alpha2.ReasonMissingPermissions},
		{apply.CodeImmutable, v1alpha2.ReasonImmutableFieldChanged},
		{apply.CodeCollision, v1alpha2.ReasonCollision},
		{apply.CodeWriteFailed, v1alpha2.ReasonApplyFailed},
		{apply.CodeHookFailed, v1alpha2.ReasonHookFailed},
		{apply.Code(0), v1alpha2.ReasonApplyFailed},
		{apply.Code(99), v1alpha2.ReasonApplyFailed},
	}
	for _, tt := range tests {
		t.Run(tt.code.String(), func(t *testing.T) {
			if got := applyReason(tt.code); got != tt.want {
				t.Fatalf("applyReason(%s) = %s, want %s", tt.code, got, tt.want)
			}
		})
	}
}

func TestApplyFailure(t *testing.T) {
	collision := &apply.Error{Code: apply.CodeCollision, Message: "1 object(s) collide, nothing was applied: object ConfigMap ns/a exists"}
	forbidden := &apply.Error{Code: apply.CodeForbidden, Message: "the API server forbade 1 object(s), nothing was applied: object Secret ns/s: forbidden"}
	hook := &apply.Error{Code: apply.CodeHookFailed, Message: "hook Job.batch ns/pre failed: BackoffLimitExceeded"}
	plain := errors.New("connection refused")
	tests := []struct {
		name       string
		err        error
		wantReason string // "" when err carries no failure
		wantMsg    string // the failure's message
		wantPolicy failure.Policy
	}{
		{name: "nil", err: nil},
		{name: "not the engine's", err: plain},
		{name: "a context error", err: fmt.Errorf("waiting: %w", context.DeadlineExceeded)},
		{name: "collision", err: collision,
			wantReason: v1alpha2.ReasonCollision, wantMsg: collision.Message, wantPolicy: failure.Hold},
		{name: "missing permissions are retried", err: forbidden,
			wantReason: v1alpha2.ReasonMissingPermissions, wantMsg: forbidden.Message, wantPolicy: failure.Retry},
		{name: "wrapped", err: fmt.Errorf("object ConfigMap \"a\": %w", &apply.Error{Code: apply.CodeUnknownKind, Message: "kind x/v1, Kind=W is not served"}),
			wantReason: v1alpha2.ReasonUnknownKind, wantMsg: "kind x/v1, Kind=W is not served", wantPolicy: failure.Retry},
		{name: "joined with a transient error", err: errors.Join(collision, plain),
			wantReason: v1alpha2.ReasonCollision, wantMsg: collision.Message, wantPolicy: failure.Hold},
		{name: "hook failure with a note", err: fmt.Errorf("%w (deleting it as hook-failed asks: %v)", hook, plain),
			wantReason: v1alpha2.ReasonHookFailed, wantMsg: hook.Message, wantPolicy: failure.Hold},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := applyFailure(tt.err)
			if tt.err == nil {
				if got != nil {
					t.Fatalf("applyFailure(nil) = %v", got)
				}
				return
			}
			if got.Error() != tt.err.Error() {
				t.Errorf("message = %q, want %q", got.Error(), tt.err.Error())
			}
			if !errors.Is(got, tt.err) {
				t.Errorf("the engine's error is no longer in the chain of %v", got)
			}
			f := failure.As(got)
			if tt.wantReason == "" {
				if f != nil {
					t.Fatalf("failure = %+v, want none", f)
				}
				return
			}
			if f == nil || f.Reason != tt.wantReason || f.Message != tt.wantMsg {
				t.Fatalf("failure = %+v, want reason %s, message %q", f, tt.wantReason, tt.wantMsg)
			}
			if p := failure.PolicyOf(failure.Reason(got, "")); p != tt.wantPolicy {
				t.Errorf("policy = %s, want %s", p, tt.wantPolicy)
			}
			// Wrapped again on its way up, it keeps its reason.
			if r := failure.Reason(fmt.Errorf("correcting drift: %w", got), ""); r != tt.wantReason {
				t.Errorf("reason after wrapping = %s, want %s", r, tt.wantReason)
			}
		})
	}
}

func TestCollisionPolicy(t *testing.T) {
	tests := []struct {
		in   v1alpha2.CollisionProtection
		want apply.CollisionPolicy
	}{
		{"", apply.CollisionPrevent},
		{v1alpha2.CollisionProtectionPrevent, apply.CollisionPrevent},
		{v1alpha2.CollisionProtectionIfNoController, apply.CollisionIfNoController},
		{v1alpha2.CollisionProtectionNone, apply.CollisionNone},
	}
	for _, tt := range tests {
		if got := collisionPolicy(tt.in); got != tt.want {
			t.Errorf("collisionPolicy(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
