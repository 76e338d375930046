package ownership_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/ownership"
	"github.com/rukpak/rukpak/pkg/failure"
)

func TestCheck(t *testing.T) {
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "uid-team"},
		Spec: v1alpha2.BundleDeploymentSpec{ProvisionerClassName: v1alpha2.ClassPlain, Sources: []v1alpha2.BundleSource{{
			Type: v1alpha2.SourceTypeImage, Image: &v1alpha2.ImageSource{Ref: "example.com/a@sha256:" + strings.Repeat("a", 64)},
		}}},
	}
	spec := v1alpha2.BundleSpec{ProvisionerClassName: v1alpha2.ClassPlain, Sources: bd.Spec.Sources}
	controller := func(apiVersion, kind, name, uid string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: ptr.To(true)}}
	}
	good := func() *v1alpha2.Bundle {
		return &v1alpha2.Bundle{
			ObjectMeta: metav1.ObjectMeta{
				Name:            "team-0123456789",
				Labels:          map[string]string{v1alpha2.LabelBundleDeployment: "team"},
				Annotations:     map[string]string{v1alpha2.AnnotationRequestedBy: "system:serviceaccount:rukpak-system:rukpak"},
				OwnerReferences: controller("core.rukpak.io/v1alpha2", "BundleDeployment", "team", "uid-team"),
			},
			Spec: *spec.DeepCopy(),
		}
	}
	writers := []string{"system:serviceaccount:rukpak-system:rukpak"}
	tests := []struct {
		name    string
		mutate  func(*v1alpha2.Bundle)
		writers []string
		// checkSpec uses CheckSpec against spec.
		checkSpec bool
		want      string // "" means accepted
	}{
		{name: "created by the BundleDeployment", writers: writers, checkSpec: true},
		{name: "no controller", mutate: func(b *v1alpha2.Bundle) { b.OwnerReferences = nil }, want: "it has no controller"},
		{name: "owner but not controller", mutate: func(b *v1alpha2.Bundle) { b.OwnerReferences[0].Controller = nil }, want: "it has no controller"},
		{name: "controlled by a deleted BundleDeployment of the same name",
			mutate: func(b *v1alpha2.Bundle) {
				b.OwnerReferences = controller("core.rukpak.io/v1alpha2", "BundleDeployment", "team", "uid-old")
			},
			want: "its controller is a BundleDeployment team with uid uid-old, not this one (uid uid-team)"},
		{name: "controlled by another BundleDeployment",
			mutate: func(b *v1alpha2.Bundle) {
				b.OwnerReferences = controller("core.rukpak.io/v1alpha2", "BundleDeployment", "other", "uid-team")
			},
			want: "its controller is BundleDeployment other"},
		{name: "controlled by another kind",
			mutate: func(b *v1alpha2.Bundle) {
				b.OwnerReferences = controller("apps/v1", "BundleDeployment", "team", "uid-team")
			},
			want: "its controller is BundleDeployment team"},
		{name: "labelled for another", mutate: func(b *v1alpha2.Bundle) { b.Labels[v1alpha2.LabelBundleDeployment] = "other" },
			want: `it is labelled core.rukpak.io/bundle-deployment="other"`},
		{name: "another team's revision name", mutate: func(b *v1alpha2.Bundle) { b.Name = "other-0123456789" },
			want: "its name is not team-<10 hex digits>"},
		{name: "name of a longer BundleDeployment's revision", mutate: func(b *v1alpha2.Bundle) { b.Name = "team-x-0123456789" },
			want: "its name is not team-<10 hex digits>"},
		{name: "written by a user", writers: writers,
			mutate: func(b *v1alpha2.Bundle) { b.Annotations[v1alpha2.AnnotationRequestedBy] = "mallory" },
			want:   `it was written by "mallory", not by rukpak`},
		{name: "writer unknown to the check", mutate: func(b *v1alpha2.Bundle) { b.Annotations = nil }},
		{name: "another class", mutate: func(b *v1alpha2.Bundle) { b.Spec.ProvisionerClassName = v1alpha2.ClassHelm },
			want: "its class core-rukpak-io-helm is not the BundleDeployment's core-rukpak-io-plain"},
		{name: "other sources under the revision's name", checkSpec: true,
			mutate: func(b *v1alpha2.Bundle) {
				b.Spec.Sources[0].Image.Ref = "evil.example.com/x@sha256:" + strings.Repeat("b", 64)
			},
			want: "its sources differ from the pinned ones"},
		{name: "other config under the revision's name", checkSpec: true,
			mutate: func(b *v1alpha2.Bundle) { b.Spec.Config = &v1alpha2.BundleConfig{WatchNamespaces: []string{"x"}} },
			want:   "its config differs from the pinned one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := good()
			if tt.mutate != nil {
				tt.mutate(b)
			}
			var err error
			if tt.checkSpec {
				err = ownership.CheckSpec(bd, b, spec, tt.writers)
			} else {
				err = ownership.Check(bd, b, tt.writers)
			}
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if failure.Reason(err, "") != v1alpha2.ReasonBundleNotOwned || !strings.Contains(err.Error(), tt.want) ||
				!strings.Contains(err.Error(), "Bundle "+b.Name+" is not a revision created by BundleDeployment team") {
				t.Fatalf("err = %v; want BundleNotOwned naming %s and saying %q", err, b.Name, tt.want)
			}
		})
	}
}

func TestIsRevisionName(t *testing.T) {
	for name, want := range map[string]bool{
		"team-0123456789": true, "team-abcdef0123": true, "team-ABCDEF0123": false, "team-012345678": false,
		"team-01234567890": false, "team-x-0123456789": false, "teamx-0123456789": false, "team0123456789": false,
	} {
		if got := ownership.IsRevisionName("team", name); got != want {
			t.Errorf("IsRevisionName(team, %s) = %v, want %v", name, got, want)
		}
	}
}

func TestRevisionNumber(t *testing.T) {
	for label, want := range map[string]int{
		"1": 1, "42": 42, "999999999": 999999999, "": 0, "0": 0, "007": 0, "-3": 0, "+3": 0, "3.0": 0, " 3": 0, "x": 0, "1000000000": 0,
	} {
		b := &v1alpha2.Bundle{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha2.LabelRevision: label}}}
		if got := ownership.RevisionNumber(b); got != want {
			t.Errorf("RevisionNumber(label %q) = %d, want %d", label, got, want)
		}
	}
	if got := ownership.RevisionNumber(&v1alpha2.Bundle{}); got != 0 {
		t.Errorf("RevisionNumber(no label) = %d, want 0", got)
	}
}

func TestNextRevisionNumber(t *testing.T) {
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "uid-team"},
		Spec:       v1alpha2.BundleDeploymentSpec{ProvisionerClassName: v1alpha2.ClassPlain},
	}
	writers := []string{"rukpak"}
	rev := func(name, number, writer, uid string) v1alpha2.Bundle {
		return v1alpha2.Bundle{
			ObjectMeta: metav1.ObjectMeta{
				Name:            name,
				Labels:          map[string]string{v1alpha2.LabelBundleDeployment: "team", v1alpha2.LabelRevision: number},
				Annotations:     map[string]string{v1alpha2.AnnotationRequestedBy: writer},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "core.rukpak.io/v1alpha2", Kind: "BundleDeployment", Name: "team", UID: types.UID(uid), Controller: ptr.To(true)}},
			},
			Spec: v1alpha2.BundleSpec{ProvisionerClassName: v1alpha2.ClassPlain},
		}
	}
	tests := []struct {
		name    string
		bundles []v1alpha2.Bundle
		last    int
		want    int
	}{
		{name: "first revision", want: 1},
		{name: "after the highest", bundles: []v1alpha2.Bundle{rev("team-0000000001", "3", "rukpak", "uid-team"), rev("team-0000000002", "5", "rukpak", "uid-team")}, want: 6},
		{name: "revisions without numbers", bundles: []v1alpha2.Bundle{rev("team-0000000001", "", "rukpak", "uid-team")}, want: 1},
		{name: "a Bundle planted with a large number counts for nothing",
			bundles: []v1alpha2.Bundle{rev("team-0000000001", "2", "rukpak", "uid-team"), rev("team-0000000002", "900", "mallory", "uid-team")}, want: 3},
		{name: "a deleted BundleDeployment's revisions count for nothing",
			bundles: []v1alpha2.Bundle{rev("team-0000000001", "7", "rukpak", "uid-old")}, want: 1},
		{name: "the number handed out last, not in the cache yet", bundles: []v1alpha2.Bundle{rev("team-0000000001", "2", "rukpak", "uid-team")}, last: 3, want: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ownership.NextRevisionNumber(bd, tt.bundles, writers, tt.last); got != tt.want {
				t.Fatalf("NextRevisionNumber = %d, want %d", got, tt.want)
			}
		})
	}
}
