package failure

import (
	"errors"
	"fmt"
	"testing"
)

func TestReason(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"plain error falls back", errors.New("boom"), "Fallback"},
		{"terminal failure", New("InvalidContent", "bad"), "InvalidContent"},
		{"wrapped terminal failure", fmt.Errorf("ctx: %w", New("UnknownKind", "x")), "UnknownKind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Reason(tt.err, "Fallback"); got != tt.want {
				t.Fatalf("Reason() = %q, want %q", got, tt.want)
			}
		})
	}
	if As(errors.New("x")) != nil {
		t.Fatal("As of a plain error must be nil")
	}
	if f := New("R", "file %s", "a.yaml"); f.Error() != "file a.yaml" {
		t.Fatalf("message = %q", f.Error())
	}
}
