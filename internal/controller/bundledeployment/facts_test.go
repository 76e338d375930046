package bundledeployment

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// Every status field a reconcile sets, derived from its facts, without a
// cluster.
func TestComputeStatusProjectsFacts(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	now := metav1.NewTime(then.Add(time.Hour))
	pinned := []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeImage, Image: &v1alpha2.ImageSource{Ref: "example.com/b@sha256:1"}}}
	observed := v1alpha2.BundleDeploymentStatus{
		ActiveBundle: "r1", LastHealthyBundle: "r1", InstalledObjects: 2,
		FailedBundle: "r0", FailedRetry: "a", FailedGeneration: 1,
		SkippedObjects: []v1alpha2.ObjectReference{{Kind: "Widget", Name: "w"}}, KeptCRDs: []string{"widgets.example.com"},
		ResolvedSources: pinned, LastResolvedTime: &then,
		InstalledVersion: "1.2.0", NewestVersion: "1.3.0",
	}
	review := &v1alpha2.BundleDeploymentReview{Revision: "r2", Approved: true}
	tests := []struct {
		name   string
		paused bool
		// facts change the observed ones (nil: the facts as observed).
		facts  func(f *statusFacts)
		review *v1alpha2.BundleDeploymentReview
		want   func(st *v1alpha2.BundleDeploymentStatus)
	}{
		{
			name: "a reconcile that learned nothing changes nothing",
			want: func(*v1alpha2.BundleDeploymentStatus) {},
		},
		{
			name: "an upgrade installed",
			facts: func(f *statusFacts) {
				f.activated("r2", 5, "")
				f.skipped, f.keptCRDs = nil, nil
				f.failed = failedMark{}
			},
			review: review,
			want: func(st *v1alpha2.BundleDeploymentStatus) {
				st.ActiveBundle, st.InstalledObjects = "r2", 5
				st.InstalledVersion = "" // its sources select no version
				st.SkippedObjects, st.KeptCRDs = nil, nil
				st.FailedBundle, st.FailedRetry, st.FailedGeneration = "", "", 0
				st.Review = review
			},
		},
		{
			name: "a rollback after a missed deadline",
			facts: func(f *statusFacts) {
				f.activated("r1", 2, "1.2.0")
				f.keep([]keptCRD{{name: "gadgets.example.com"}})
				f.failed = failedMark{bundle: "r2", retry: "b", generation: 3}
			},
			want: func(st *v1alpha2.BundleDeploymentStatus) {
				st.KeptCRDs = []string{"gadgets.example.com"}
				st.FailedBundle, st.FailedRetry, st.FailedGeneration = "r2", "b", 3
			},
		},
		{
			name: "an upgrade of a range installed",
			facts: func(f *statusFacts) {
				f.newestVersion = "1.3.0"
				f.activated("r2", 2, "1.3.0")
			},
			want: func(st *v1alpha2.BundleDeploymentStatus) {
				st.ActiveBundle, st.InstalledVersion, st.NewestVersion = "r2", "1.3.0", "1.3.0"
			},
		},
		{
			name:  "a newer version found, not installed yet",
			facts: func(f *statusFacts) { f.newestVersion = "1.4.0" },
			want:  func(st *v1alpha2.BundleDeploymentStatus) { st.NewestVersion = "1.4.0" },
		},
		{
			name:  "a revision found healthy",
			facts: func(f *statusFacts) { f.lastHealthy = "r2"; f.active = "r2" },
			want:  func(st *v1alpha2.BundleDeploymentStatus) { st.ActiveBundle, st.LastHealthyBundle = "r2", "r2" },
		},
		{
			name:  "a status field refused",
			facts: func(f *statusFacts) { f.lastHealthy = "" },
			want:  func(st *v1alpha2.BundleDeploymentStatus) { st.LastHealthyBundle = "" },
		},
		{
			name:  "floating sources resolved again",
			facts: func(f *statusFacts) { f.lastResolved = &now },
			want:  func(st *v1alpha2.BundleDeploymentStatus) { st.LastResolvedTime = &now },
		},
		{
			name:  "sources that stopped floating",
			facts: func(f *statusFacts) { f.lastResolved = nil },
			want:  func(st *v1alpha2.BundleDeploymentStatus) { st.LastResolvedTime = nil },
		},
		{
			name:   "paused changes none of them",
			paused: true,
			facts:  func(f *statusFacts) { f.activated("r9", 9, ""); f.lastHealthy = "" },
			want:   func(*v1alpha2.BundleDeploymentStatus) {},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bd := &v1alpha2.BundleDeployment{}
			bd.Generation = 3
			bd.Spec.Paused = tt.paused
			bd.Status = *observed.DeepCopy()
			s := scope{bd: bd, facts: observe(&bd.Status, nil), review: tt.review}
			if tt.facts != nil {
				tt.facts(&s.facts)
			}
			computeStatus(bd, &s)
			want := observed.DeepCopy()
			tt.want(want)
			got := bd.Status.DeepCopy()
			// The conditions are TestComputeStatus's.
			got.Conditions, got.ObservedGeneration = nil, 0
			if !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("status =\n%+v\nwant\n%+v", got, want)
			}
			if bd.Status.ObservedGeneration != 3 {
				t.Errorf("observedGeneration = %d, want 3", bd.Status.ObservedGeneration)
			}
		})
	}
}

// What this process applied last is the active revision, whatever the
// status observed says; observe copies what it reads.
func TestObserve(t *testing.T) {
	status := &v1alpha2.BundleDeploymentStatus{ActiveBundle: "r1", KeptCRDs: []string{"a"}}
	if f := observe(status, nil); f.active != "r1" {
		t.Errorf("active = %q without an applied state, want r1", f.active)
	}
	f := observe(status, &appliedState{bundle: "r2"})
	if f.active != "r2" {
		t.Errorf("active = %q, want what was applied, r2", f.active)
	}
	f.keptCRDs[0] = "changed"
	if status.KeptCRDs[0] != "a" {
		t.Errorf("observe shares the status's slices")
	}
}
