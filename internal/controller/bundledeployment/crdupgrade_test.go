//go:build integration

package bundledeployment_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/controller/bundledeployment"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// scheduleCRD reads a revision of the snapshot schedule CRD of
// testdata/crdupgrade, named after plural.
func scheduleCRD(t *testing.T, file, plural string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "crdupgrade", file))
	if err != nil {
		t.Fatal(err)
	}
	kind := "Schedule" + strings.ReplaceAll(strings.TrimPrefix(plural, "schedules"), "-", "")
	return strings.NewReplacer("PLURAL", plural, "SINGULAR", strings.TrimSuffix(plural, "s"), "KIND", kind).Replace(string(data))
}

// TestCRDStatusUpgradeJudgedByStoredObjects upgrades a CRD whose next
// revision changes only its status schema (a field newly required, a
// field removed, maxLength tightened): with no custom resources it
// installs; with a stored one the new schema refuses it is refused as
// CRDUpgradeUnsafe, naming the object, the field and the finding; and
// accepting that one finding lets it install.
func TestCRDStatusUpgradeJudgedByStoredObjects(t *testing.T) {
	tests := []struct {
		name string
		// status of a custom resource stored before the upgrade; none if
		// empty.
		status map[string]any
	}{
		{name: "no custom resources"},
		{
			name: "a custom resource whose condition has no reason",
			status: map[string]any{"conditions": []any{map[string]any{
				"type": "Ready", "status": "False", "message": "", "lastTransitionTime": "2024-05-01T10:00:00Z",
			}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plural := envtest.UniqueName("schedules")
			crdName := plural + ".example.com"
			bd := newBD(t, envtest.UniqueName("crdup"), manifests(t, map[string]string{"crd.yaml": scheduleCRD(t, "schedules-v1.yaml", plural)}))
			waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)

			var ns string
			if tt.status != nil {
				ns = env.Namespace(t, "crdup")
				storeSchedule(t, crdName, ns, "nightly", tt.status)
			}

			updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) {
				b.Spec.Sources = source(manifests(t, map[string]string{"crd.yaml": scheduleCRD(t, "schedules-v2.yaml", plural)}))
			})
			if tt.status == nil {
				waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
				waitSchemaHasNoHeartbeat(t, crdName)
				return
			}

			const finding = "Invalid:v1:.status.conditions[*].reason"
			got := waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonCRDUpgradeUnsafe)
			msg := installedMessage(got)
			t.Logf("refusal: %s", msg)
			for _, want := range []string{
				"CRD " + crdName + ": ",
				"[" + finding + "] optional field became required",
				ns + "/nightly (status.conditions[0].reason: Required value)",
				"spec.upgrade.acceptedCRDFindings",
			} {
				if !strings.Contains(msg, want) {
					t.Fatalf("message %q lacks %q", msg, want)
				}
			}
			// The only finding: the removed heartbeat and the tightened
			// bounds break nothing stored.
			if strings.Count(msg, "[Invalid:") != 1 || strings.Contains(msg, "[Pruned:") {
				t.Fatalf("message %q has other findings than %s", msg, finding)
			}

			updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) {
				b.Spec.Upgrade = &v1alpha2.UpgradePolicy{AcceptedCRDFindings: []v1alpha2.AcceptedCRDFinding{{CRD: crdName, Finding: finding}}}
			})
			waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
			waitSchemaHasNoHeartbeat(t, crdName)
		})
	}
}

// storeSchedule creates a custom resource of the CRD crdName in ns and
// writes status through the status subresource, as its operator would.
func storeSchedule(t *testing.T, crdName, ns, name string, status map[string]any) {
	t.Helper()
	ctx := context.Background()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: crdName}, crd); err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": crd.Spec.Group + "/v1",
		"kind":       crd.Spec.Names.Kind,
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       map[string]any{"schedule": "0 2 * * *", "retention": map[string]any{"maxCount": int64(7)}},
	}}
	envtest.Eventually(t, 20*time.Second, func() error { return env.Client.Create(ctx, obj) })
	obj.Object["status"] = status
	envtest.Eventually(t, 10*time.Second, func() error { return env.Client.Status().Update(ctx, obj) })
}

// waitSchemaHasNoHeartbeat waits until the installed CRD is the second
// revision: its conditions have no lastHeartbeatTime.
func waitSchemaHasNoHeartbeat(t *testing.T, crdName string) {
	t.Helper()
	envtest.Eventually(t, 10*time.Second, func() error {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: crdName}, crd); err != nil {
			return err
		}
		conditions := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"].Properties["conditions"].Items.Schema
		if _, ok := conditions.Properties["lastHeartbeatTime"]; ok {
			return fmt.Errorf("CRD %s still has the first revision's schema", crdName)
		}
		return nil
	})
}

// TestCustomResourceListerFallsBack: custom resources are listed as the
// manager, and as the install identity only when the manager is
// forbidden.
func TestCustomResourceListerFallsBack(t *testing.T) {
	cfg, err := env.AddUser(envtest.UniqueName("no-rights"))
	if err != nil {
		t.Fatal(err)
	}
	nobody, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name          string
		manager       client.Reader
		install       client.Reader
		wantForbidden bool
	}{
		{name: "the manager may list", manager: env.Client, install: nobody},
		{name: "the manager is forbidden, the install identity may list", manager: nobody, install: env.Client},
		{name: "the manager is forbidden and installs itself", manager: nobody, wantForbidden: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := bundledeployment.NewCustomResourceLister(tt.manager, tt.install)
			err := l.List(context.Background(), &corev1.ConfigMapList{}, client.InNamespace(v1alpha2.SystemNamespace), client.Limit(1))
			if got := apierrors.IsForbidden(err); got != tt.wantForbidden || (err != nil && !got) {
				t.Fatalf("List() error = %v, want forbidden %v", err, tt.wantForbidden)
			}
		})
	}
}
