package failure

import (
	"testing"

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
