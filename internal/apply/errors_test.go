package apply_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/rukpak/rukpak/internal/apply"
)

func TestErrorCode(t *testing.T) {
	refused := &apply.Error{Code: apply.CodeRefused, Message: "object ConfigMap ns/a: invalid"}
	tests := []struct {
		name     string
		err      error
		wantCode apply.Code
		wantName string
	}{
		{name: "nil", err: nil, wantName: "Code(0)"},
		{name: "plain", err: errors.New("connection refused"), wantName: "Code(0)"},
		{name: "an Error", err: refused, wantCode: apply.CodeRefused, wantName: "Refused"},
		{name: "wrapped", err: fmt.Errorf("applying: %w", refused), wantCode: apply.CodeRefused, wantName: "Refused"},
		{name: "joined", err: errors.Join(errors.New("x"), &apply.Error{Code: apply.CodeHookFailed}), wantCode: apply.CodeHookFailed, wantName: "HookFailed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := apply.CodeOf(tt.err)
			if got != tt.wantCode || got.String() != tt.wantName {
				t.Fatalf("CodeOf = %s, want %s", got, tt.wantName)
			}
			if (apply.As(tt.err) != nil) != (tt.wantCode != 0) {
				t.Fatalf("As = %v", apply.As(tt.err))
			}
		})
	}
	if refused.Error() != refused.Message {
		t.Fatalf("Error() = %q, want the message", refused.Error())
	}
}
