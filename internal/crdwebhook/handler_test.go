package crdwebhook

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// stubReader serves BundleDeployments from a map (with the findings they
// accept) and lists items.
type stubReader struct {
	bds      map[string]v1alpha2.CRDUpgradeSafety
	accepted []v1alpha2.AcceptedCRDFinding
	items    []unstructured.Unstructured
	err      error
}

var _ client.Reader = (*stubReader)(nil)

func (r *stubReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if r.err != nil {
		return r.err
	}
	safety, ok := r.bds[key.Name]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Group: "core.rukpak.io", Resource: "bundledeployments"}, key.Name)
	}
	bd := obj.(*v1alpha2.BundleDeployment)
	bd.Name = key.Name
	bd.Spec.Upgrade = &v1alpha2.UpgradePolicy{CRDUpgradeSafety: safety, AcceptedCRDFindings: r.accepted}
	return nil
}

func (r *stubReader) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	list.(*unstructured.UnstructuredList).Items = r.items
	return nil
}

// testCRD is a namespaced CRD widgets.example.com whose v1 spec has the
// given string properties, labelled as owned by BundleDeployment owner
// unless owner is "".
func testCRD(owner string, props ...string) *apiextensionsv1.CustomResourceDefinition {
	spec := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
	for _, p := range props {
		spec.Properties[p] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type:       "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec},
				}},
			}},
		},
	}
	if owner != "" {
		crd.Labels = map[string]string{v1alpha2.LabelOwnerKind: "BundleDeployment", v1alpha2.LabelOwnerName: owner}
	}
	return crd
}

func raw(t *testing.T, obj any) runtime.RawExtension {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return runtime.RawExtension{Raw: b}
}

func widget(name string, spec map[string]any) unstructured.Unstructured {
	return unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": "ns"},
		"spec":     spec,
	}}
}

func TestHandle(t *testing.T) {
	relabelled := testCRD("x", "color")
	relabelled.Labels["extra"] = "yes"
	patterned := testCRD("x", "color")
	patterned.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["color"] = apiextensionsv1.JSONSchemaProps{Type: "string", Pattern: "^[a-z]+$"}
	otherKind := testCRD("x", "color")
	otherKind.Labels[v1alpha2.LabelOwnerKind] = "Something"
	tests := []struct {
		name        string
		op          admissionv1.Operation
		user        string
		oldObj      any
		newObj      any
		reader      *stubReader
		wantAllowed bool
		wantCode    int32
		wantMessage []string
	}{
		{name: "create is allowed", op: admissionv1.Create, oldObj: nil, newObj: testCRD("x", "color"), wantAllowed: true},
		{name: "trusted user", user: "rukpak", oldObj: testCRD("x", "color"), newObj: testCRD("x"), wantAllowed: true},
		{name: "undecodable old object", oldObj: nil, newObj: testCRD("x"), wantMessage: []string{"decoding old object", "object is empty"}},
		{name: "wrong kind", oldObj: map[string]any{"kind": "Pod"}, newObj: testCRD("x"), wantMessage: []string{"decoding old object", `"Pod"`}},
		{name: "not labelled", oldObj: testCRD("", "color"), newObj: testCRD(""), wantAllowed: true},
		{name: "other owner kind", oldObj: otherKind, newObj: testCRD(""), wantAllowed: true},
		{name: "spec unchanged", oldObj: testCRD("x", "color"), newObj: relabelled, reader: &stubReader{err: errors.New("must not be read")}, wantAllowed: true},
		{name: "BundleDeployment gone", oldObj: testCRD("x", "color"), newObj: testCRD("x"), wantAllowed: true},
		{name: "opted out", oldObj: testCRD("x", "color"), newObj: testCRD("x"), reader: &stubReader{bds: map[string]v1alpha2.CRDUpgradeSafety{"x": v1alpha2.CRDUpgradeSafetyNone}}, wantAllowed: true},
		{
			name: "field removed", oldObj: testCRD("x", "color"), newObj: testCRD("x"),
			reader: &stubReader{bds: map[string]v1alpha2.CRDUpgradeSafety{"x": v1alpha2.CRDUpgradeSafetyStrict}, items: []unstructured.Unstructured{
				widget("plain", map[string]any{}), widget("colored", map[string]any{"color": "red"}),
			}},
			wantMessage: []string{"[Pruned:v1:.spec.color] field removed", "existing objects holding a value there: ns/colored (spec.color: value would be pruned)",
				"managed by BundleDeployment x", "acceptedCRDFindings", "crdUpgradeSafety to None"},
		},
		{
			name: "field removed, no object holds it", oldObj: testCRD("x", "color"), newObj: testCRD("x"),
			reader:      &stubReader{bds: map[string]v1alpha2.CRDUpgradeSafety{"x": v1alpha2.CRDUpgradeSafetyStrict}, items: []unstructured.Unstructured{widget("plain", map[string]any{})}},
			wantAllowed: true,
		},
		{
			name: "field removed, finding accepted", oldObj: testCRD("x", "color"), newObj: testCRD("x"),
			reader: &stubReader{bds: map[string]v1alpha2.CRDUpgradeSafety{"x": v1alpha2.CRDUpgradeSafetyStrict},
				accepted: []v1alpha2.AcceptedCRDFinding{{CRD: "widgets.example.com", Finding: "Pruned:v1:.spec.color"}},
				items:    []unstructured.Unstructured{widget("colored", map[string]any{"color": "red"})}},
			wantAllowed: true,
		},
		{
			name: "field removed, finding accepted for another CRD", oldObj: testCRD("x", "color"), newObj: testCRD("x"),
			reader: &stubReader{bds: map[string]v1alpha2.CRDUpgradeSafety{"x": v1alpha2.CRDUpgradeSafetyStrict},
				accepted: []v1alpha2.AcceptedCRDFinding{{CRD: "gadgets.example.com", Finding: "Pruned:v1:.spec.color"}},
				items:    []unstructured.Unstructured{widget("colored", map[string]any{"color": "red"})}},
			wantMessage: []string{"[Pruned:v1:.spec.color]"},
		},
		{
			name: "existing object fails", oldObj: testCRD("x", "color"), newObj: patterned,
			reader: &stubReader{bds: map[string]v1alpha2.CRDUpgradeSafety{"x": ""}, items: []unstructured.Unstructured{
				widget("ok", map[string]any{"color": "red"}), widget("bad", map[string]any{"color": "RED"}),
			}},
			wantMessage: []string{"[Invalid:v1:.spec.color]", "ns/bad (spec.color: Invalid value"},
		},
		{
			name: "optional field added", oldObj: testCRD("x", "color"), newObj: testCRD("x", "color", "size"),
			reader:      &stubReader{bds: map[string]v1alpha2.CRDUpgradeSafety{"x": ""}, items: []unstructured.Unstructured{widget("a", map[string]any{"color": "red"})}},
			wantAllowed: true,
		},
		{name: "read error", oldObj: testCRD("x", "color"), newObj: testCRD("x"), reader: &stubReader{err: errors.New("boom")}, wantCode: 500, wantMessage: []string{"boom"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reader := tt.reader
			if reader == nil {
				reader = &stubReader{}
			}
			op := tt.op
			if op == "" {
				op = admissionv1.Update
			}
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: op,
				UserInfo:  authenticationv1.UserInfo{Username: tt.user},
				Object:    raw(t, tt.newObj),
			}}
			if tt.oldObj != nil {
				req.OldObject = raw(t, tt.oldObj)
			}
			h := &Handler{Reader: reader, TrustedUsers: []string{"rukpak"}}
			resp := h.Handle(context.Background(), req)
			if resp.Allowed != tt.wantAllowed {
				t.Fatalf("allowed = %v, want %v (%+v)", resp.Allowed, tt.wantAllowed, resp.Result)
			}
			msg := ""
			if resp.Result != nil {
				msg = resp.Result.Message
				if tt.wantCode != 0 && resp.Result.Code != tt.wantCode {
					t.Errorf("code = %d, want %d", resp.Result.Code, tt.wantCode)
				}
			}
			for _, want := range tt.wantMessage {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q lacks %q", msg, want)
				}
			}
		})
	}
}
