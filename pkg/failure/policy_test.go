package failure

import (
	"testing"
	"time"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

func TestPolicyOf(t *testing.T) {
	for _, tc := range []struct {
		reason string
		want   Policy
	}{
		{v1alpha2.ReasonUnknownKind, Retry},
		{v1alpha2.ReasonNamespaceNotFound, Retry},
		{v1alpha2.ReasonMissingPermissions, Retry},
		{v1alpha2.ReasonNotAuthorized, Retry},
		{v1alpha2.ReasonPruneFailed, Retry},
		{v1alpha2.ReasonInvalidContent, Hold},
		{v1alpha2.ReasonRenderFailed, Hold},
		{v1alpha2.ReasonCRDUpgradeUnsafe, Hold},
		{v1alpha2.ReasonValidationFailed, Hold},
		{v1alpha2.ReasonRolledBack, Hold},
		{"SomethingNew", Hold},
	} {
		if got := PolicyOf(tc.reason); got != tc.want {
			t.Errorf("PolicyOf(%s) = %s, want %s", tc.reason, got, tc.want)
		}
	}
}

func TestRetryBackoff(t *testing.T) {
	for _, tc := range []struct {
		attempt int
		want    time.Duration
	}{
		{0, time.Second}, {1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second},
		{7, 64 * time.Second},
		{8, RetryBackoffMax}, // 128s is over the cap
		{100, RetryBackoffMax},
	} {
		if got := RetryBackoff(tc.attempt); got != tc.want {
			t.Errorf("RetryBackoff(%d) = %v, want %v", tc.attempt, got, tc.want)
		}
	}
}
