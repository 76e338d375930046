//go:build integration

package bundledeployment_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// TestCRDCollisionBeforeUpgradeSafety: a bundle shipping a CRD that exists
// with a schema that would be an unsafe change of it gets the most precise
// reason. A CRD another BundleDeployment manages, or a hand-made one the
// policy does not adopt, is a Collision naming who has it (whatever the
// policy, two BundleDeployments never fight); a hand-made one the policy
// adopts is an upgrade of it, so it is compared: CRDUpgradeUnsafe.
func TestCRDCollisionBeforeUpgradeSafety(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		handMade   bool
		policy     v1alpha2.CollisionProtection
		wantReason string
	}{
		{"another BundleDeployment's, Prevent", false, v1alpha2.CollisionProtectionPrevent, v1alpha2.ReasonCollision},
		{"another BundleDeployment's, IfNoController", false, v1alpha2.CollisionProtectionIfNoController, v1alpha2.ReasonCollision},
		{"another BundleDeployment's, None", false, v1alpha2.CollisionProtectionNone, v1alpha2.ReasonCollision},
		{"hand-made, Prevent", true, v1alpha2.CollisionProtectionPrevent, v1alpha2.ReasonCollision},
		{"hand-made, None", true, v1alpha2.CollisionProtectionNone, v1alpha2.ReasonCRDUpgradeUnsafe},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			plural := envtest.UniqueName("sprockets")
			kind := "S" + strings.ReplaceAll(plural[len("sprockets-"):], "-", "")
			crdName := plural + ".example.com"
			first := fmt.Sprintf(widgetCRD, plural, kind, plural[:len(plural)-1], "              size: {type: integer}\n              color: {type: string}\n")
			holder := "hand-made"
			if tt.handMade {
				crd := &apiextensionsv1.CustomResourceDefinition{}
				if err := yaml.Unmarshal([]byte(first), crd); err != nil {
					t.Fatal(err)
				}
				if err := env.Client.Create(ctx, crd); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = env.Client.Delete(context.Background(), crd) })
			} else {
				owner := newBD(t, envtest.UniqueName("crd-a"), manifests(t, map[string]string{"crd.yaml": first}))
				waitCondition(t, owner.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
				holder = owner.Name
			}

			// A custom resource with a size: dropping the field would
			// prune its value.
			cr := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "example.com/v1", "kind": kind,
				"metadata": map[string]any{"name": "sized", "namespace": "default"},
				"spec":     map[string]any{"size": int64(3)},
			}}
			envtest.Eventually(t, 20*time.Second, func() error { return env.Client.Create(ctx, cr) })

			// The same CRD without size: an unsafe change of the installed one.
			second := fmt.Sprintf(widgetCRD, plural, kind, plural[:len(plural)-1], "              color: {type: string}\n")
			other := &v1alpha2.BundleDeployment{
				ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("crd-b")},
				Spec: v1alpha2.BundleDeploymentSpec{
					ProvisionerClassName: v1alpha2.ClassPlain,
					InstallNamespace:     envtest.UniqueName("crd-b"),
					Sources:              source(manifests(t, map[string]string{"crd.yaml": second})),
					CollisionProtection:  tt.policy,
				},
			}
			if err := env.Client.Create(ctx, other); err != nil {
				t.Fatal(err)
			}
			got := waitCondition(t, other.Name, v1alpha2.TypeInstalled, metav1.ConditionFalse, tt.wantReason)
			msg := installedMessage(got)
			if !strings.Contains(msg, crdName) {
				t.Fatalf("message %q does not name the CRD %s", msg, crdName)
			}
			if tt.wantReason == v1alpha2.ReasonCollision && !tt.handMade && !strings.Contains(msg, holder) {
				t.Fatalf("message %q does not name the CRD's owner %s", msg, holder)
			}
			if tt.wantReason == v1alpha2.ReasonCRDUpgradeUnsafe && (!strings.Contains(msg, "[Pruned:v1:.spec.size]") || !strings.Contains(msg, "default/sized")) {
				t.Fatalf("message %q does not name the removed field .spec.size and the object holding one", msg)
			}
		})
	}
}
