package approval

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

func withAnnotations(annotations map[string]string) *v1alpha2.BundleDeployment {
	return &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Annotations: annotations},
		Spec:       v1alpha2.BundleDeploymentSpec{ProvisionerClassName: v1alpha2.ClassPlain, InstallNamespace: "team-a"},
	}
}

func TestRequester(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		user        string
		groups      []string
		ok          bool
	}{
		{"no annotations", nil, "", nil, false},
		{"empty user", map[string]string{v1alpha2.AnnotationRequestedBy: "", v1alpha2.AnnotationRequestedByGroups: "a"}, "", nil, false},
		{"user without groups", map[string]string{v1alpha2.AnnotationRequestedBy: "carol"}, "carol", nil, true},
		{"user and groups", map[string]string{
			v1alpha2.AnnotationRequestedBy:       "carol",
			v1alpha2.AnnotationRequestedByGroups: "team-a,system:authenticated",
		}, "carol", []string{"team-a", "system:authenticated"}, true},
		{"empty group entries dropped", map[string]string{
			v1alpha2.AnnotationRequestedBy:       "carol",
			v1alpha2.AnnotationRequestedByGroups: ",team-a,,",
		}, "carol", []string{"team-a"}, true},
		{"escaped comma", map[string]string{
			v1alpha2.AnnotationRequestedBy:       "carol",
			v1alpha2.AnnotationRequestedByGroups: `a\,b,system:authenticated`,
		}, "carol", []string{"a,b", "system:authenticated"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			user, groups, ok := Requester(withAnnotations(tt.annotations))
			if user != tt.user || !slices.Equal(groups, tt.groups) || ok != tt.ok {
				t.Fatalf("Requester() = %q, %q, %v; want %q, %q, %v", user, groups, ok, tt.user, tt.groups, tt.ok)
			}
		})
	}
}

func TestDecodeGroups(t *testing.T) {
	tests := []struct {
		value string
		want  []string
	}{
		{"", nil},
		{"a", []string{"a"}},
		{"a,b", []string{"a", "b"}},
		{`a\,b`, []string{"a,b"}},
		{`a\,b,c`, []string{"a,b", "c"}},
		{`\,`, []string{","}},
		{`a\\,b`, []string{`a\`, "b"}},
		{`a\\\,b`, []string{`a\,b`}},
		{`x\y`, []string{"xy"}},
		{`trailing\`, []string{`trailing\`}},
		{",,", nil},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			if got := DecodeGroups(tt.value); !slices.Equal(got, tt.want) {
				t.Fatalf("DecodeGroups(%q) = %q, want %q", tt.value, got, tt.want)
			}
		})
	}
}

// EncodeGroups and DecodeGroups are inverse for any group names.
func TestEncodeGroupsRoundTrip(t *testing.T) {
	for _, groups := range [][]string{
		{"system:authenticated"},
		{"a,b", "c"},
		{`back\slash`, `trailing\`, `\,`, ",", ",,lead"},
		{"team-a", "Ünïcode,grüppe"},
	} {
		enc := EncodeGroups(groups)
		if got := DecodeGroups(enc); !slices.Equal(got, groups) {
			t.Errorf("DecodeGroups(EncodeGroups(%q)) = %q (encoded %q)", groups, got, enc)
		}
	}
}

// A BundleDeployment without the annotation (written before the policies
// were installed, or without them) is refused, and the message says how to
// fix it. No review is made (Reviews is nil).
// The Bundles the manager creates record it as their requester with
// RequesterAnnotations, as rukpak-requested-by would (which skips the
// manager's own Bundles), so that the requester check trusts them
// (Checker.TrustedUsers); Requester reads them back.
func TestRequesterAnnotations(t *testing.T) {
	manager := authenticationv1.UserInfo{
		Username: "system:serviceaccount:rukpak-system:rukpak-manager",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:rukpak-system", "odd,group", "system:authenticated"},
	}
	for _, tc := range []struct {
		name string
		user authenticationv1.UserInfo
		want map[string]string
	}{
		{"unknown: left to the policy", authenticationv1.UserInfo{}, nil},
		{"the manager", manager, map[string]string{
			v1alpha2.AnnotationRequestedBy:       manager.Username,
			v1alpha2.AnnotationRequestedByGroups: `system:serviceaccounts,system:serviceaccounts:rukpak-system,odd\,group,system:authenticated`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := RequesterAnnotations(tc.user)
			if !maps.Equal(got, tc.want) {
				t.Fatalf("RequesterAnnotations() = %v, want %v", got, tc.want)
			}
			if tc.want == nil {
				return
			}
			user, groups, ok := Requester(&v1alpha2.Bundle{ObjectMeta: metav1.ObjectMeta{Annotations: got}})
			if !ok || user != tc.user.Username || !slices.Equal(groups, tc.user.Groups) {
				t.Errorf("Requester reads back %q %v (%v), want %q %v", user, groups, ok, tc.user.Username, tc.user.Groups)
			}
		})
	}
}

func TestCheckWithoutAnnotation(t *testing.T) {
	err := (&Checker{}).Check(context.Background(), withAnnotations(nil))
	f := failure.As(err)
	if f == nil || f.Reason != v1alpha2.ReasonNotAuthorized {
		t.Fatalf("Check() = %v, want a NotAuthorized failure", err)
	}
	for _, want := range []string{v1alpha2.AnnotationRequestedBy, "config/policy", "not installed", "kubectl annotate bundledeployment hello"} {
		if !strings.Contains(f.Message, want) {
			t.Errorf("message %q does not contain %q", f.Message, want)
		}
	}
}

// system:masters passes every authorization check, so no review is made
// (Reviews is nil).
func TestCheckMasters(t *testing.T) {
	bd := withAnnotations(map[string]string{
		v1alpha2.AnnotationRequestedBy:       "kube-admin",
		v1alpha2.AnnotationRequestedByGroups: "system:masters,system:authenticated",
	})
	if err := (&Checker{}).Check(context.Background(), bd); err != nil {
		t.Fatalf("Check() = %v, want nil", err)
	}
}
