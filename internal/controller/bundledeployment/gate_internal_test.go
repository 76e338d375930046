package bundledeployment

import (
	"testing"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

func TestHolds(t *testing.T) {
	grows := &v1alpha2.RevisionReview{GrowsPower: true}
	same := &v1alpha2.RevisionReview{}
	for _, tc := range []struct {
		name    string
		policy  v1alpha2.ApprovalPolicy
		rev     *v1alpha2.RevisionReview
		upgrade bool
		want    bool
	}{
		{"automatic upgrade that grows", v1alpha2.ApprovalAutomatic, grows, true, false},
		{"power growth upgrade that grows", v1alpha2.ApprovalPowerGrowth, grows, true, true},
		{"power growth upgrade that grows nothing", v1alpha2.ApprovalPowerGrowth, same, true, false},
		{"power growth first install", v1alpha2.ApprovalPowerGrowth, grows, false, false},
		{"always first install", v1alpha2.ApprovalAlways, same, false, true},
		{"always upgrade", v1alpha2.ApprovalAlways, same, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := holds(tc.policy, tc.rev, tc.upgrade); got != tc.want {
				t.Errorf("holds = %v, want %v", got, tc.want)
			}
		})
	}
}
