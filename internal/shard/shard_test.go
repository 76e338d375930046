package shard

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"", true},
		{"a", true},
		{"shard-1", true},
		{strings.Repeat("a", 63), true},
		{strings.Repeat("a", 64), false},
		{"Upper", false},
		{"under_score", false},
		{"-lead", false},
		{"dot.ted", false},
	} {
		if err := Validate(tc.name); (err == nil) != tc.ok {
			t.Errorf("Validate(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func TestLeaderElectionID(t *testing.T) {
	for _, tc := range []struct{ base, shard, want string }{
		{"rukpak-manager", "", "rukpak-manager"},
		{"rukpak-manager", "a", "rukpak-manager-shard-a"},
		{"other", "b", "other-shard-b"},
	} {
		if got := LeaderElectionID(tc.base, tc.shard); got != tc.want {
			t.Errorf("LeaderElectionID(%q, %q) = %q, want %q", tc.base, tc.shard, got, tc.want)
		}
	}
}

// TestSelector: each object is selected by exactly the manager of its
// shard; an empty label value by none (Unserved reports it).
func TestSelector(t *testing.T) {
	managers := []string{"", "a", "b"}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   string // the one manager that selects it; "-" for none
	}{
		{"no labels", nil, ""},
		{"other labels", map[string]string{"app": "x"}, ""},
		{"shard a", map[string]string{v1alpha2.LabelShard: "a"}, "a"},
		{"shard b with others", map[string]string{v1alpha2.LabelShard: "b", "app": "x"}, "b"},
		{"unknown shard", map[string]string{v1alpha2.LabelShard: "c"}, "-"},
		{"empty value", map[string]string{v1alpha2.LabelShard: ""}, "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, m := range managers {
				if Selector(m).Matches(labels.Set(tc.labels)) {
					got = append(got, m)
				}
			}
			switch {
			case tc.want == "-" && len(got) != 0:
				t.Errorf("selected by %q, want none", got)
			case tc.want != "-" && (len(got) != 1 || got[0] != tc.want):
				t.Errorf("selected by %q, want only %q", got, tc.want)
			}
			_, labelled := tc.labels[v1alpha2.LabelShard]
			if Sharded().Matches(labels.Set(tc.labels)) != labelled {
				t.Errorf("Sharded() = %v, want %v", !labelled, labelled)
			}
		})
	}
}

func TestLive(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	lease := func(shard string, renewedAgo time.Duration, seconds int32) coordinationv1.Lease {
		l := coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: LeaseName(shard), Labels: map[string]string{v1alpha2.LabelShard: shard}},
			Spec: coordinationv1.LeaseSpec{RenewTime: ptr.To(metav1.NewMicroTime(now.Add(-renewedAgo))), LeaseDurationSeconds: ptr.To(seconds)}}
		return l
	}
	unlabelled := lease("x", 0, 30)
	unlabelled.Labels = nil
	noRenew := lease("y", 0, 30)
	noRenew.Spec.RenewTime = nil
	for _, tc := range []struct {
		name   string
		leases []coordinationv1.Lease
		want   []string
	}{
		{"none", nil, nil},
		{"fresh", []coordinationv1.Lease{lease("a", time.Second, 30)}, []string{"a"}},
		{"just within", []coordinationv1.Lease{lease("a", 29*time.Second, 30)}, []string{"a"}},
		{"expired", []coordinationv1.Lease{lease("a", 30*time.Second, 30)}, nil},
		{"mixed", []coordinationv1.Lease{lease("a", time.Minute, 30), lease("b", 0, 30), lease("c", 5*time.Second, 10)}, []string{"b", "c"}},
		{"unlabelled or unrenewed", []coordinationv1.Lease{unlabelled, noRenew}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Live(tc.leases, now)
			if len(got) != len(tc.want) {
				t.Fatalf("Live = %v, want %v", got, tc.want)
			}
			for _, s := range tc.want {
				if !got[s] {
					t.Errorf("Live = %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestUnserved(t *testing.T) {
	live := map[string]bool{"a": true}
	for _, tc := range []struct {
		shard, want string
	}{
		{"a", ""},
		{"b", `no manager of shard "b" is running`},
		{"", "is empty"},
		{"Not_Valid", "names no shard a manager can run"},
	} {
		got := Unserved(tc.shard, live)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("Unserved(%q) = %q, want %q", tc.shard, got, tc.want)
		}
	}
}

func TestCopyLabelAndOwned(t *testing.T) {
	bd := &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: "bd", UID: "u1", Labels: map[string]string{v1alpha2.LabelShard: "a"}}}
	for _, tc := range []struct {
		name string
		from metav1.Object
		to   map[string]string
		want map[string]string
	}{
		{"sharded, no labels", bd, nil, map[string]string{v1alpha2.LabelShard: "a"}},
		{"sharded, other labels", bd, map[string]string{"x": "y"}, map[string]string{"x": "y", v1alpha2.LabelShard: "a"}},
		{"unsharded", &v1alpha2.BundleDeployment{}, map[string]string{"x": "y"}, map[string]string{"x": "y"}},
	} {
		b := &v1alpha2.Bundle{ObjectMeta: metav1.ObjectMeta{Labels: tc.to}}
		CopyLabel(tc.from, b)
		if !labels.Equals(b.Labels, tc.want) {
			t.Errorf("%s: labels %v, want %v", tc.name, b.Labels, tc.want)
		}
	}
	owned := &v1alpha2.Bundle{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{UID: "u1", Controller: ptr.To(true)}}}}
	other := &v1alpha2.Bundle{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{UID: "u2", Controller: ptr.To(true)}}}}
	for b, want := range map[*v1alpha2.Bundle]bool{owned: true, other: false, {}: false} {
		if Owned(bd, b) != want {
			t.Errorf("Owned(%v) = %v, want %v", b.OwnerReferences, !want, want)
		}
	}
}

func TestMayHaveBundles(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status v1alpha2.BundleDeploymentStatus
		want   bool
	}{
		{"new", v1alpha2.BundleDeploymentStatus{}, false},
		{"active bundle", v1alpha2.BundleDeploymentStatus{ActiveBundle: "bd-0123456789"}, true},
		{"failed before its first install", v1alpha2.BundleDeploymentStatus{Conditions: []metav1.Condition{{Type: v1alpha2.TypeInstalled}}}, true},
		{"observed", v1alpha2.BundleDeploymentStatus{ObservedGeneration: 1}, true},
	} {
		if got := mayHaveBundles(&v1alpha2.BundleDeployment{Status: tc.status}); got != tc.want {
			t.Errorf("%s: mayHaveBundles = %v, want %v", tc.name, got, tc.want)
		}
	}
}
