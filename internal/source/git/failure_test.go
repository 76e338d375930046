package git

import (
	"strings"
	"testing"

	"github.com/rukpak/rukpak/pkg/failure"
)

// transient as a wanted reason means an error that is not a terminal
// failure.
const transient = "(transient)"

// checkFailure checks that err is a failure with reason (or a transient
// error, for the reason transient) whose message contains msg.
func checkFailure(t *testing.T, op string, err error, reason, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s succeeded, want a %s failure", op, reason)
	}
	got := failure.Reason(err, transient)
	if got != reason {
		t.Fatalf("%s reason = %q, want %q (error %v)", op, got, reason, err)
	}
	if !strings.Contains(err.Error(), msg) {
		t.Fatalf("%s error %q does not contain %q", op, err, msg)
	}
}
