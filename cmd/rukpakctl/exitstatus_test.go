package main

import (
	"fmt"
	"testing"
)

func TestExitStatus(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantCode int
		wantMsg  string
	}{
		{name: "any error", err: fmt.Errorf("boom"), wantCode: 1, wantMsg: "boom"},
		{name: "differences found: status 1, nothing printed", err: &exitError{code: diffFound}, wantCode: 1},
		{name: "diff failed", err: &exitError{code: diffFailed, err: fmt.Errorf("bad input")}, wantCode: 2, wantMsg: "bad input"},
		{name: "wrapped", err: fmt.Errorf("x: %w", &exitError{code: diffFailed, err: fmt.Errorf("inner")}), wantCode: 2, wantMsg: "inner"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, msg := exitStatus(tt.err)
			if code != tt.wantCode {
				t.Errorf("code = %d, want %d", code, tt.wantCode)
			}
			if (msg == nil) != (tt.wantMsg == "") || (msg != nil && msg.Error() != tt.wantMsg) {
				t.Errorf("message = %v, want %q", msg, tt.wantMsg)
			}
		})
	}
}
