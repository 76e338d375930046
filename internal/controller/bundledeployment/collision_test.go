//go:build integration

package bundledeployment_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// existing creates ConfigMap ns/name outside rukpak, optionally controlled
// by another object.
func existing(t *testing.T, ns, name string, controlled bool) *corev1.ConfigMap {
	t.Helper()
	ctx := context.Background()
	_ = env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string]string{"value": "theirs"}}
	if controlled {
		cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "someone", UID: "1234", Controller: ptr.To(true)}}
	}
	if err := env.Client.Create(ctx, cm, client.FieldOwner("kubectl-create")); err != nil {
		t.Fatal(err)
	}
	return cm
}

func installedMessage(bd *v1alpha2.BundleDeployment) string {
	return meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled).Message
}

// TestCollisionProtection checks each policy against objects that exist
// before the install and are not managed by rukpak.
func TestCollisionProtection(t *testing.T) {
	tests := []struct {
		name       string
		policy     v1alpha2.CollisionProtection
		controlled bool
		wantReason string
		wantInMsg  string
	}{
		{"Prevent refuses and names the manager", v1alpha2.CollisionProtectionPrevent, false, v1alpha2.ReasonCollision, "kubectl-create"},
		{"IfNoController adopts an object without controller", v1alpha2.CollisionProtectionIfNoController, false, v1alpha2.ReasonInstalled, ""},
		{"IfNoController refuses a controlled object", v1alpha2.CollisionProtectionIfNoController, true, v1alpha2.ReasonCollision, "controlled by Deployment someone"},
		{"None adopts a controlled object", v1alpha2.CollisionProtectionNone, true, v1alpha2.ReasonInstalled, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := envtest.UniqueName("collide")
			existing(t, ns, "shared", tt.controlled)
			bd := &v1alpha2.BundleDeployment{
				ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("bd")},
				Spec: v1alpha2.BundleDeploymentSpec{
					ProvisionerClassName: v1alpha2.ClassPlain,
					InstallNamespace:     ns,
					Sources:              source(manifests(t, map[string]string{"a.yaml": cmYAML("shared", "ours"), "b.yaml": cmYAML("other", "ours")})),
					CollisionProtection:  tt.policy,
				},
			}
			if err := env.Client.Create(context.Background(), bd); err != nil {
				t.Fatal(err)
			}
			if tt.wantReason == v1alpha2.ReasonInstalled {
				waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
				waitValue(t, ns, "shared", "ours")
				return
			}
			bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionFalse, tt.wantReason)
			if msg := installedMessage(bd); !strings.Contains(msg, "shared") || !strings.Contains(msg, tt.wantInMsg) {
				t.Fatalf("message %q should name the object and %q", msg, tt.wantInMsg)
			}
			// Nothing was applied: the other object is absent, the existing one untouched.
			mustNotExist(t, &corev1.ConfigMap{}, ns, "other")
			if data, _ := configMapData(t, ns, "shared"); data["value"] != "theirs" {
				t.Fatalf("existing object changed: %v", data)
			}
		})
	}
}

// TestRetryAfterCollisionStaysRefused: a refused revision's objects are in
// the inventory (recorded before any write, to prune what a failure leaves)
// but were never applied; retrying it must check the stranger's object
// again, not treat it as the BundleDeployment's own.
func TestRetryAfterCollisionStaysRefused(t *testing.T) {
	ns := envtest.UniqueName("collide")
	existing(t, ns, "shared", false)
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("bd")},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     ns,
			Sources:              source(manifests(t, map[string]string{"a.yaml": cmYAML("shared", "ours"), "b.yaml": cmYAML("other", "ours")})),
		},
	}
	if err := env.Client.Create(context.Background(), bd); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonCollision)
	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) {
		if b.Annotations == nil {
			b.Annotations = map[string]string{}
		}
		b.Annotations[v1alpha2.AnnotationRetry] = "again"
	})
	// The retry has run once the failure is recorded for it.
	envtest.Eventually(t, 20*time.Second, func() error {
		got := getBD(t, bd.Name)
		if got.Status.FailedRetry != "again" {
			return fmt.Errorf("failed revision recorded for retry %q", got.Status.FailedRetry)
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha2.TypeInstalled); c == nil || c.Reason != v1alpha2.ReasonCollision {
			return fmt.Errorf("Installed = %+v after the retry, want Collision", c)
		}
		return nil
	})
	if data, _ := configMapData(t, ns, "shared"); data["value"] != "theirs" {
		t.Fatalf("the retry took over the stranger's object: %v", data)
	}
	mustNotExist(t, &corev1.ConfigMap{}, ns, "other")
}

// TestTwoBundleDeploymentsAndHandOff: a second BundleDeployment is refused
// an object the first manages, whatever its policy; once the first drops
// the object in a new revision, it moves to the second without being
// deleted and re-created.
func TestTwoBundleDeploymentsAndHandOff(t *testing.T) {
	ctx := context.Background()
	ns := envtest.UniqueName("handoff")
	a := newBD(t, ns, manifests(t, map[string]string{"x.yaml": cmYAML("x", "from-a"), "y.yaml": cmYAML("cm-y", "from-a")}))
	waitCondition(t, a.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	x := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "x"}, x); err != nil {
		t.Fatal(err)
	}

	b := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("bd")},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     ns,
			Sources:              source(manifests(t, map[string]string{"x.yaml": cmYAML("x", "from-b")})),
			CollisionProtection:  v1alpha2.CollisionProtectionNone,
		},
	}
	if err := env.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	got := waitCondition(t, b.Name, v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonCollision)
	if msg := installedMessage(got); !strings.Contains(msg, "BundleDeployment "+a.Name) {
		t.Fatalf("message %q should name BundleDeployment %s", msg, a.Name)
	}
	waitValue(t, ns, "x", "from-a")

	// A's next revision drops x: it moves to B, same object.
	updateBD(t, a.Name, func(bd *v1alpha2.BundleDeployment) {
		bd.Spec.Sources = source(manifests(t, map[string]string{"y.yaml": cmYAML("cm-y", "from-a")}))
	})
	waitCondition(t, b.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	waitValue(t, ns, "x", "from-b")
	after := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "x"}, after); err != nil {
		t.Fatal(err)
	}
	if after.UID != x.UID {
		t.Fatalf("object x was deleted and re-created (uid %s → %s)", x.UID, after.UID)
	}
	if after.Labels[v1alpha2.LabelOwnerName] != b.Name {
		t.Fatalf("object x owner label = %q, want %s", after.Labels[v1alpha2.LabelOwnerName], b.Name)
	}
	waitCondition(t, a.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	if data, err := configMapData(t, ns, "cm-y"); err != nil || data["value"] != "from-a" {
		t.Fatalf("cm-y = %v, %v", data, err)
	}
}
