package schedule

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// A reconcile that reads its BundleDeployment from a cache that has not
// seen this process's last status patch works with the status it wrote;
// any other version is taken as it is.
func TestCatchUpStatus(t *testing.T) {
	written := v1alpha2.BundleDeploymentStatus{ActiveBundle: "app-0123456789", ObservedGeneration: 1}
	stale := v1alpha2.BundleDeploymentStatus{ObservedGeneration: 0}
	others := v1alpha2.BundleDeploymentStatus{ActiveBundle: "forged"}
	tests := []struct {
		name     string
		uid, rv  string
		status   v1alpha2.BundleDeploymentStatus
		want     v1alpha2.BundleDeploymentStatus
		wantKept bool
	}{
		{name: "the cache has not seen the write", uid: "u", rv: "10", status: stale, want: written, wantKept: true},
		{name: "the cache shows the write", uid: "u", rv: "11", status: written, want: written},
		{name: "someone wrote since", uid: "u", rv: "12", status: others, want: others},
		{name: "another BundleDeployment of the same name", uid: "v", rv: "10", status: stale, want: stale},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(Options{})
			s.own.set("app", ownStatus{uid: "u", base: "10", rv: "11", status: written.DeepCopy()})
			bd := &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: "app", UID: types.UID(tt.uid), ResourceVersion: tt.rv}, Status: tt.status}
			s.CatchUpStatus(bd)
			if bd.Status.ActiveBundle != tt.want.ActiveBundle || bd.Status.ObservedGeneration != tt.want.ObservedGeneration {
				t.Fatalf("status = %+v, want %+v", bd.Status, tt.want)
			}
			if _, kept := s.own.get("app"); kept != tt.wantKept {
				t.Fatalf("kept = %v, want %v", kept, tt.wantKept)
			}
		})
	}
	// The cache's echo of the write (the informer's update) drops it too,
	// and so does forgetting the BundleDeployment.
	s := New(Options{})
	patched := &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: "app", UID: "u", ResourceVersion: "11"}, Status: written}
	s.StatusWritten(patched, "10")
	s.Observe(&v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: "app", UID: "u", ResourceVersion: "10"}})
	if _, kept := s.own.get("app"); !kept {
		t.Fatal("dropped on an event of another version")
	}
	s.Observe(patched)
	if _, kept := s.own.get("app"); kept {
		t.Fatal("kept after the cache showed the write")
	}
	s.StatusWritten(patched, "10")
	s.Forget("app")
	if _, kept := s.own.get("app"); kept {
		t.Fatal("kept after the BundleDeployment was forgotten")
	}
}
