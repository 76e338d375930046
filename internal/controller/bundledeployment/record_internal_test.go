package bundledeployment

import (
	"maps"
	"slices"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/approval"
)

// The Bundles the manager creates record it as their requester, as
// rukpak-requested-by would (which skips the manager's own Bundles), so
// that the requester check trusts them (approval.Checker.TrustedUsers).
func TestRequesterAnnotations(t *testing.T) {
	manager := authenticationv1.UserInfo{
		Username: "system:serviceaccount:rukpak-system:rukpak-manager",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:rukpak-system", "odd,group", "system:authenticated"},
	}
	for _, tc := range []struct {
		name string
		self authenticationv1.UserInfo
		want map[string]string
	}{
		{"unknown: left to the policy", authenticationv1.UserInfo{}, nil},
		{"the manager", manager, map[string]string{
			v1alpha2.AnnotationRequestedBy:       manager.Username,
			v1alpha2.AnnotationRequestedByGroups: `system:serviceaccounts,system:serviceaccounts:rukpak-system,odd\,group,system:authenticated`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reconciler{Options: Options{Self: tc.self}}
			got := r.requesterAnnotations()
			if !maps.Equal(got, tc.want) {
				t.Fatalf("requesterAnnotations() = %v, want %v", got, tc.want)
			}
			if tc.want == nil {
				return
			}
			b := &v1alpha2.Bundle{}
			b.Annotations = got
			user, groups, ok := approval.Requester(b)
			if !ok || user != tc.self.Username || !slices.Equal(groups, tc.self.Groups) {
				t.Errorf("approval.Requester reads back %q %v (%v), want %q %v", user, groups, ok, tc.self.Username, tc.self.Groups)
			}
		})
	}
}
