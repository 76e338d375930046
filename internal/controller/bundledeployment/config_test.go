//go:build integration

package bundledeployment_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// TestConfigTheClassDoesNotReadIsRefused gives Helm values to a plain
// bundle: refused, not ignored.
func TestConfigTheClassDoesNotReadIsRefused(t *testing.T) {
	ns := envtest.UniqueName("cfg")
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("bd")},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     ns,
			Sources:              source(manifests(t, map[string]string{"cm.yaml": cmYAML("x", "1")})),
			Config:               &v1alpha2.BundleConfig{Values: &apiextensionsv1.JSON{Raw: []byte(`{"a":1}`)}},
		},
	}
	if err := env.Client.Create(context.Background(), bd); err != nil {
		t.Fatal(err)
	}
	bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonInvalidConfig)
	if c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled); !strings.Contains(c.Message, "spec.config.values") {
		t.Fatalf("message %q does not name spec.config.values", c.Message)
	}
	mustNotExist(t, &corev1.ConfigMap{}, ns, "x")
}

// chart makes ConfigMap sources holding a small Helm chart whose one
// template is a ConfigMap with data from values.
func chart(t *testing.T, template string) []v1alpha2.BundleSource {
	t.Helper()
	root := manifests(t, map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: greeter\nversion: 0.1.0\n",
		"values.yaml": "greeting: default\nname: world\n",
	})
	tmpl := manifests(t, map[string]string{"cm.yaml": template})
	return []v1alpha2.BundleSource{{
		Type: v1alpha2.SourceTypeConfigMaps,
		ConfigMaps: []v1alpha2.ConfigMapSource{
			{ConfigMap: v1alpha2.LocalObjectReference{Name: root}},
			{ConfigMap: v1alpha2.LocalObjectReference{Name: tmpl}, Path: "templates"},
		},
	}}
}

const greeterTemplate = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-greeting
data:
  value: "{{ .Values.greeting }}, {{ .Values.name }}"
`

// TestHelmValuesFrom installs a chart whose values come from a ConfigMap
// that does not exist yet, then from one that changes: each change of the
// values is a new revision.
func TestHelmValuesFrom(t *testing.T) {
	ctx := context.Background()
	ns := envtest.UniqueName("helm")
	valuesCM := envtest.UniqueName("values")
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("bd")},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassHelm,
			InstallNamespace:     ns,
			Sources:              chart(t, greeterTemplate),
			Config: &v1alpha2.BundleConfig{
				ValuesFrom: []v1alpha2.ValuesReference{{Kind: "ConfigMap", Name: valuesCM}},
				Values:     &apiextensionsv1.JSON{Raw: []byte(`{"name":"rukpak"}`)},
			},
		},
	}
	if err := env.Client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonInvalidConfig)
	if c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled); !strings.Contains(c.Message, valuesCM) {
		t.Fatalf("message %q does not name ConfigMap %s", c.Message, valuesCM)
	}

	// valuesFrom first, then values on top.
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: valuesCM, Namespace: v1alpha2.SystemNamespace},
		Data:       map[string]string{"values.yaml": "greeting: hello\nname: ignored\n"},
	}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	name := bd.Name + "-greeting"
	waitValue(t, ns, name, "hello, rukpak")
	first := waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled).Status.ActiveBundle

	// Changing the ConfigMap is an upgrade to a new revision.
	cm.Data["values.yaml"] = "greeting: goodbye\n"
	if err := env.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	waitValue(t, ns, name, "goodbye, rukpak")
	envtest.Eventually(t, 20*time.Second, func() error {
		got := &v1alpha2.BundleDeployment{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: bd.Name}, got); err != nil {
			return err
		}
		if got.Status.ActiveBundle == first {
			return fmt.Errorf("active revision is still %s", first)
		}
		return nil
	})

	// Drift is corrected to the values applied.
	live := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, live); err != nil {
		t.Fatal(err)
	}
	live.Data["value"] = "tampered"
	if err := env.Client.Update(ctx, live); err != nil {
		t.Fatal(err)
	}
	waitValue(t, ns, name, "goodbye, rukpak")
}

// TestHelmTemplateErrorIsReported installs a chart whose template fails:
// Installed=False, reason RenderFailed, with Helm's error.
func TestHelmTemplateErrorIsReported(t *testing.T) {
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("bd")},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassHelm,
			InstallNamespace:     envtest.UniqueName("helm"),
			Sources:              chart(t, `{{ required "greeting.missing is required" .Values.missing }}`),
			RevisionHistoryLimit: ptr.To(int32(1)),
		},
	}
	if err := env.Client.Create(context.Background(), bd); err != nil {
		t.Fatal(err)
	}
	bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonRenderFailed)
	c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled)
	if !strings.Contains(c.Message, "greeting.missing is required") || !strings.Contains(c.Message, "cm.yaml") {
		t.Fatalf("message %q lacks the template error or file", c.Message)
	}
}

func waitValue(t *testing.T, ns, name, want string) {
	t.Helper()
	envtest.Eventually(t, 30*time.Second, func() error {
		data, err := configMapData(t, ns, name)
		if err != nil {
			return err
		}
		if data["value"] != want {
			return fmt.Errorf("value = %q, want %q", data["value"], want)
		}
		return nil
	})
}
