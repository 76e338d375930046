package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// widgetCRD is the CRD widgets.<group> with the versions given, each
// "name:served:storage".
func widgetCRD(group string, versions ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.%[1]s
spec:
  group: %[1]s
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
`, group)
	for _, v := range versions {
		parts := strings.Split(v, ":")
		fmt.Fprintf(&b, `  - name: %s
    served: %s
    storage: %s
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              color: {type: string}
`, parts[0], parts[1], parts[2])
	}
	return b.String()
}

// TestRollbackKeepsStoredCRDVersion (docs/lifecycle.md, "Rolling back
// across a CRD change"): revision 2 adds v2 to a CRD as its storage
// version, a custom resource is written in v2, and revision 2's
// Deployment cannot be scheduled, so it misses its progress deadline and
// is rolled back to revision 1, whose CRD has v1 only. The rollback keeps
// revision 2's CRD (it still serves v2, which is stored), the custom
// resource stays readable, the rest of revision 1 is back, and the status
// (Installed message, status.keptCRDs) and a CRDKept event say what was
// kept.
func TestRollbackKeepsStoredCRDVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := envtest.UniqueName("rbcrd")
	ns := name
	group := name + ".e2e.rukpak.io"
	crdName := "widgets." + group
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     ns,
			Sources: source(t, map[string]string{
				"crd.yaml": widgetCRD(group, "v1:true:true"),
				"web.yaml": webDeployment("kwok", "v1"),
			}),
			HealthChecks: &v1alpha2.HealthChecks{ProgressDeadlineSeconds: ptr.To[int32](20)},
		},
	}
	cleanupBD(t, name)
	if err := suite.client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, name, v1alpha2.TypeHealthy, metav1.ConditionTrue, v1alpha2.ReasonHealthy)
	good := waitInstalled(t, name).Status.ActiveBundle

	updateSpec(t, name, func(s *v1alpha2.BundleDeploymentSpec) {
		s.Sources = source(t, map[string]string{
			"crd.yaml": widgetCRD(group, "v1:true:false", "v2:true:true"),
			"web.yaml": webDeployment("nowhere", "v2"),
		})
	})
	// Written in v2 as soon as revision 2's CRD serves it: stored in v2.
	cr := &unstructured.Unstructured{}
	cr.SetAPIVersion(group + "/v2")
	cr.SetKind("Widget")
	cr.SetNamespace(ns)
	cr.SetName("w1")
	_ = unstructured.SetNestedField(cr.Object, "blue", "spec", "color")
	envtest.Eventually(t, 20*time.Second, func() error { return suite.client.Create(ctx, cr.DeepCopy()) })
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := suite.client.Get(ctx, client.ObjectKey{Name: crdName}, crd); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(crd.Status.StoredVersions, "v2") {
		t.Fatalf("storedVersions %v after writing in v2", crd.Status.StoredVersions)
	}

	// Revision 2 misses its deadline: rolled back to revision 1.
	envtest.Eventually(t, 90*time.Second, func() error {
		if err := suite.client.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
			return err
		}
		c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled)
		if c == nil || c.Reason != v1alpha2.ReasonRolledBack || bd.Status.ActiveBundle != good {
			return fmt.Errorf("Installed = %+v, active %s (want %s)", c, bd.Status.ActiveBundle, good)
		}
		return nil
	})
	msg := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled).Message
	for _, want := range []string{"not healthy within", "kept the newer definition of CRD " + crdName, "stored versions v1, v2"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Installed message %q lacks %q", msg, want)
		}
	}
	if !slices.Equal(bd.Status.KeptCRDs, []string{crdName}) {
		t.Errorf("status.keptCRDs = %v, want [%s]", bd.Status.KeptCRDs, crdName)
	}

	// The rest of revision 1 is back: its Deployment template runs again.
	envtest.Eventually(t, 60*time.Second, func() error {
		d := &unstructured.Unstructured{}
		d.SetAPIVersion("apps/v1")
		d.SetKind("Deployment")
		if err := suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, d); err != nil {
			return err
		}
		if v, _, _ := unstructured.NestedString(d.Object, "spec", "template", "metadata", "labels", "version"); v != "v1" {
			return fmt.Errorf("web template version %q, want v1", v)
		}
		return nil
	})
	waitCondition(t, name, v1alpha2.TypeHealthy, metav1.ConditionTrue, v1alpha2.ReasonHealthy)

	// The CRD still serves the stored version, and the custom resource
	// is readable in both versions.
	if err := suite.client.Get(ctx, client.ObjectKey{Name: crdName}, crd); err != nil {
		t.Fatal(err)
	}
	var served []string
	for _, v := range crd.Spec.Versions {
		if v.Served {
			served = append(served, v.Name)
		}
	}
	if !slices.Contains(served, "v2") || !slices.Contains(crd.Status.StoredVersions, "v2") {
		t.Fatalf("CRD %s serves %v, stored versions %v: v2 should still be served", crdName, served, crd.Status.StoredVersions)
	}
	for _, version := range []string{"v2", "v1"} {
		got := &unstructured.Unstructured{}
		got.SetAPIVersion(group + "/" + version)
		got.SetKind("Widget")
		if err := suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "w1"}, got); err != nil {
			t.Fatalf("Widget w1 in %s after the rollback: %v", version, err)
		}
		if c, _, _ := unstructured.NestedString(got.Object, "spec", "color"); c != "blue" {
			t.Errorf("Widget w1 in %s: spec.color %q, want blue", version, c)
		}
	}

	// A CRDKept event names the CRD and its stored versions.
	envtest.Eventually(t, 30*time.Second, func() error {
		list := &eventsv1.EventList{}
		if err := suite.client.List(ctx, list); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Name == name && e.Reason == v1alpha2.ReasonCRDKept && strings.Contains(e.Note, crdName) && strings.Contains(e.Note, "v2") {
				return nil
			}
		}
		return fmt.Errorf("no %s event about %s naming %s", v1alpha2.ReasonCRDKept, name, crdName)
	})

	// Settled on revision 1 (healthy, drift corrected), the kept CRD is
	// not "corrected" back, and the status still says so.
	got := waitCondition(t, name, v1alpha2.TypeHealthy, metav1.ConditionTrue, v1alpha2.ReasonHealthy)
	if !slices.Equal(got.Status.KeptCRDs, []string{crdName}) {
		t.Errorf("status.keptCRDs = %v once settled, want [%s]", got.Status.KeptCRDs, crdName)
	}
	if err := suite.client.Get(ctx, client.ObjectKey{Name: crdName}, crd); err != nil {
		t.Fatal(err)
	}
	if len(crd.Spec.Versions) != 2 {
		t.Errorf("CRD %s versions %d once settled, want revision 2's two", crdName, len(crd.Spec.Versions))
	}
}
