package manager

import (
	"testing"

	internal "github.com/rukpak/rukpak/internal/manager"
)

// TestIdentityValues: the public identity values are the engine's.
func TestIdentityValues(t *testing.T) {
	if IdentityNone != internal.IdentityNone || IdentityManager != internal.IdentityManager {
		t.Fatalf("identity values differ: %q/%q vs %q/%q", IdentityNone, IdentityManager, internal.IdentityNone, internal.IdentityManager)
	}
}
