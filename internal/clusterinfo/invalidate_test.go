package clusterinfo_test

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rukpak/rukpak/internal/clusterinfo"
)

// TestInvalidateForgetsServedVersions: an answer is reused within the
// TTL even once the cluster serves something else; Invalidate makes the
// next question ask discovery again.
func TestInvalidateForgetsServedVersions(t *testing.T) {
	widgets := &metav1.APIResourceList{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{{Name: "widgets", Kind: "Widget", Namespaced: true}}}
	fake := &k8stesting.Fake{Resources: []*metav1.APIResourceList{widgets}}
	r := clusterinfo.New(&fakediscovery.FakeDiscovery{Fake: fake, FakedServerVersion: &version.Info{GitVersion: "v1.36.0"}}, time.Hour)
	serves := func(want bool) {
		t.Helper()
		caps, err := r.Capabilities()
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.Contains(caps.APIVersions, "example.com/v1/Widget"); got != want {
			t.Fatalf("APIVersions %v: serves Widget %v, want %v", caps.APIVersions, got, want)
		}
	}
	serves(true)
	fake.Resources = nil // the CRD deleted
	serves(true)         // reused within the TTL
	r.Invalidate()
	serves(false)
	fake.Resources = []*metav1.APIResourceList{widgets} // created again
	serves(false)
	r.Invalidate()
	serves(true)
}
