// Package check is a module outside rukpak's repository that uses
// pkg/envtest from a copy of rukpak's module, as the module cache holds it
// (see ../../modcache_test.go).
package check

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// TestFromModuleCache: the control plane starts with rukpak's CRDs, whose
// validation is in force (controllerName is immutable).
func TestFromModuleCache(t *testing.T) {
	env, err := envtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	}()
	ctx := context.Background()
	pc := &v1alpha2.ProvisionerClass{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("check")},
		Spec:       v1alpha2.ProvisionerClassSpec{ControllerName: "example.com/check"},
	}
	if err := env.Client.Create(ctx, pc); err != nil {
		t.Fatalf("creating a ProvisionerClass: %v", err)
	}
	pc.Spec.ControllerName = "example.com/other"
	if err := env.Client.Update(ctx, pc); err == nil {
		t.Fatal("changing controllerName was allowed: the CRD's validation is not installed")
	}
}
