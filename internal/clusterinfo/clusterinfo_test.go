//go:build integration

package clusterinfo_test

import (
	"slices"
	"testing"
	"time"

	"k8s.io/client-go/discovery"

	"github.com/rukpak/rukpak/internal/clusterinfo"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// TestCapabilities asks a real API server and checks that answers are
// cached until invalidated.
func TestCapabilities(t *testing.T) {
	env, err := envtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	r := clusterinfo.New(dc, time.Hour)
	caps, err := r.Capabilities()
	if err != nil {
		t.Fatal(err)
	}
	if caps.KubeVersion == "" {
		t.Error("KubeVersion is empty")
	}
	for _, want := range []string{"v1", "v1/ConfigMap", "apps/v1", "apps/v1/Deployment", "core.rukpak.io/v1alpha2/BundleDeployment"} {
		if !slices.Contains(caps.APIVersions, want) {
			t.Errorf("APIVersions lacks %q", want)
		}
	}
	for _, v := range caps.APIVersions {
		if v == "v1/Pod/status" || v == "apps/v1/Deployment/scale" {
			t.Errorf("APIVersions lists subresource %q", v)
		}
	}
	again, err := r.Capabilities()
	if err != nil {
		t.Fatal(err)
	}
	if again != caps {
		t.Error("second call within the TTL asked the server again")
	}
	r.Invalidate()
	fresh, err := r.Capabilities()
	if err != nil {
		t.Fatal(err)
	}
	if fresh == caps {
		t.Error("Invalidate did not drop the cached answer")
	}
}
