package bundledeployment

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// TestLookupTimes: when the floating sources were last looked up, and
// whether a lookup changes status.lastResolvedTime (only new pins do).
func TestLookupTimes(t *testing.T) {
	t0 := time.Unix(1e9, 0)
	at := func(d time.Duration) *metav1.Time { m := metav1.NewTime(t0.Add(d)); return &m }
	img := func(digest string) []v1alpha2.BundleSource {
		return []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeImage, Image: &v1alpha2.ImageSource{Ref: "r/app:v1", Digest: digest}}}
	}
	last := []struct {
		name     string
		changed  *metav1.Time
		lookedUp time.Time
		want     time.Time
		ok       bool
	}{
		{name: "never looked up", ok: false},
		{name: "after a restart: when the pins changed", changed: at(0), want: t0, ok: true},
		{name: "this process looked since", changed: at(0), lookedUp: t0.Add(time.Minute), want: t0.Add(time.Minute), ok: true},
		{name: "the pins changed after this process looked (another manager)", changed: at(2 * time.Minute), lookedUp: t0.Add(time.Minute), want: t0.Add(2 * time.Minute), ok: true},
		{name: "looked up, no pins recorded", lookedUp: t0, want: t0, ok: true},
	}
	for _, tc := range last {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := lastLookup(tc.changed, tc.lookedUp)
			if ok != tc.ok || !got.Equal(tc.want) {
				t.Errorf("lastLookup = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
	changed := []struct {
		name             string
		last             *metav1.Time
		recorded, pinned []v1alpha2.BundleSource
		want             bool
	}{
		{name: "first lookup", recorded: nil, pinned: img("sha256:a"), want: true},
		{name: "same pins found again", last: at(0), recorded: img("sha256:a"), pinned: img("sha256:a"), want: false},
		{name: "new pins", last: at(0), recorded: img("sha256:a"), pinned: img("sha256:b"), want: true},
		{name: "pins recorded without a time (an older manager)", recorded: img("sha256:a"), pinned: img("sha256:a"), want: true},
	}
	for _, tc := range changed {
		t.Run(tc.name, func(t *testing.T) {
			if got := pinsChanged(tc.last, tc.recorded, tc.pinned); got != tc.want {
				t.Errorf("pinsChanged = %v, want %v", got, tc.want)
			}
		})
	}
}
