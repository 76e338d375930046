package bundledeployment

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAppliedObjectDrifted(t *testing.T) {
	now := metav1.Now()
	applied := appliedObject{rv: "10", generation: 3,
		labels: map[string]string{"app": "web"}, annotations: map[string]string{"core.rukpak.io/revision": "r1"}}
	noGeneration := applied
	noGeneration.generation = 0
	live := func(mutate func(*metav1.ObjectMeta)) *metav1.PartialObjectMetadata {
		m := metav1.ObjectMeta{ResourceVersion: "11", Generation: 3,
			Labels:      map[string]string{"app": "web", "added-by-someone": "x"},
			Annotations: map[string]string{"core.rukpak.io/revision": "r1", "deployment.kubernetes.io/revision": "2"}}
		if mutate != nil {
			mutate(&m)
		}
		return &metav1.PartialObjectMetadata{ObjectMeta: m}
	}
	tests := []struct {
		name    string
		applied appliedObject
		live    *metav1.PartialObjectMetadata
		want    bool
	}{
		{"own write echoed", applied, live(func(m *metav1.ObjectMeta) { m.ResourceVersion = "10" }), false},
		{"status or foreign metadata changed", applied, live(nil), false},
		{"spec changed", applied, live(func(m *metav1.ObjectMeta) { m.Generation = 4 }), true},
		{"bundle label changed", applied, live(func(m *metav1.ObjectMeta) { m.Labels["app"] = "other" }), true},
		{"bundle annotation removed", applied, live(func(m *metav1.ObjectMeta) { delete(m.Annotations, "core.rukpak.io/revision") }), true},
		{"being deleted", applied, live(func(m *metav1.ObjectMeta) { m.DeletionTimestamp = &now }), true},
		{"kind without generation: any change", noGeneration, live(func(m *metav1.ObjectMeta) { m.Generation = 0 }), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.applied.drifted(tt.live); got != tt.want {
				t.Fatalf("drifted = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestAppliedObjectKeep: what the revision applied with
// helm.sh/resource-policy: keep (as Helm reads it) is kept; hooks never.
func TestAppliedObjectKeep(t *testing.T) {
	tests := []struct {
		name  string
		value string
		hook  bool
		want  bool
	}{
		{name: "keep", value: "keep", want: true},
		{name: "case and spaces ignored", value: " Keep ", want: true},
		{name: "other policy", value: "delete"},
		{name: "none"},
		{name: "hook", value: "keep", hook: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := appliedObject{hash: "h", rv: "1", hook: tt.hook}
			if tt.value != "" {
				a.annotations = map[string]string{"helm.sh/resource-policy": tt.value}
			}
			if got := a.record().Keep; got != tt.want {
				t.Fatalf("record().Keep = %v, want %v", got, tt.want)
			}
		})
	}
}
