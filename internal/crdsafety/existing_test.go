package crdsafety

import (
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestValidateExisting validates objects that pass and fail the new schema.
func TestValidateExisting(t *testing.T) {
	newSpec := object(props{
		"mode":  enum(`"slow"`),
		"size":  str(),
		"owner": str(),
		"tier":  withDefault(str(), `"gold"`),
		"tags":  arrayOf(apiextensionsv1.JSONSchemaProps{Type: "string", MaxLength: i64(3)}),
	}, "owner", "tier")
	withUnserved := func(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
		crd.Spec.Versions[1].Served = false
		return crd
	}
	tests := []struct {
		name  string
		crd   *apiextensionsv1.CustomResourceDefinition
		objs  []unstructured.Unstructured
		limit int
		want  []ObjectFailure
	}{
		{
			name: "valid objects",
			crd:  newCRD(version("v1", newSpec)),
			objs: []unstructured.Unstructured{
				widget("example.com/v1", "ns", "w1", `{"owner": "me", "mode": "slow", "size": "3", "tags": ["a"]}`),
				widget("example.com/v1", "ns", "w2", `{"owner": "me", "tier": "silver"}`),
			},
		},
		{
			name: "value removed from enum",
			crd:  newCRD(version("v1", newSpec)),
			objs: []unstructured.Unstructured{widget("example.com/v1", "ns", "w1", `{"owner": "me", "mode": "fast"}`)},
			want: []ObjectFailure{{Namespace: "ns", Name: "w1", Version: "v1", Reason: FailureSchemaInvalid,
				Message: `spec.mode: Unsupported value: "fast": supported values: "slow"`}},
		},
		{
			name: "field type changed",
			crd:  newCRD(version("v1", newSpec)),
			objs: []unstructured.Unstructured{widget("example.com/v1", "ns", "w1", `{"owner": "me", "size": 3}`)},
			want: []ObjectFailure{{Namespace: "ns", Name: "w1", Version: "v1", Reason: FailureSchemaInvalid,
				Message: `spec.size: Invalid value: "integer": spec.size in body must be of type string: "integer"`}},
		},
		{
			name: "required field missing (defaulted required field is fine)",
			crd:  newCRD(version("v1", newSpec)),
			objs: []unstructured.Unstructured{widget("example.com/v1", "", "w1", `{"mode": "slow"}`)},
			want: []ObjectFailure{{Name: "w1", Version: "v1", Reason: FailureSchemaInvalid,
				Message: `spec.owner: Required value`}},
		},
		{
			name: "several errors: first by field, then a count",
			crd:  newCRD(version("v1", newSpec)),
			objs: []unstructured.Unstructured{widget("example.com/v1", "ns", "w1", `{"size": 1, "tags": ["abcd"], "mode": "x"}`)},
			want: []ObjectFailure{{Namespace: "ns", Name: "w1", Version: "v1", Reason: FailureSchemaInvalid,
				Message: `spec.mode: Unsupported value: "x": supported values: "slow" (and 3 more errors)`}},
		},
		{
			name: "version removed",
			crd:  newCRD(version("v1", newSpec)),
			objs: []unstructured.Unstructured{widget("example.com/v1beta1", "ns", "old", `{}`)},
			want: []ObjectFailure{{Namespace: "ns", Name: "old", Version: "v1beta1", Reason: FailureVersionRemoved,
				Message: "version v1beta1 is no longer served"}},
		},
		{
			name: "version no longer served is still validated",
			crd:  withUnserved(newCRD(version("v1", newSpec), version("v1beta1", object(props{"mode": enum(`"slow"`)})))),
			objs: []unstructured.Unstructured{
				widget("example.com/v1beta1", "ns", "ok", `{"mode": "slow"}`),
				widget("example.com/v1beta1", "ns", "bad", `{"mode": "fast"}`),
			},
			want: []ObjectFailure{{Namespace: "ns", Name: "bad", Version: "v1beta1", Reason: FailureSchemaInvalid,
				Message: `spec.mode: Unsupported value: "fast": supported values: "slow"`}},
		},
		{
			name: "version without schema accepts everything",
			crd:  newCRD(apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", Served: true}),
			objs: []unstructured.Unstructured{widget("example.com/v1", "ns", "w1", `{"anything": [1, 2]}`)},
		},
		{
			name: "limit stops early",
			crd:  newCRD(version("v1", newSpec)),
			objs: []unstructured.Unstructured{
				widget("example.com/v1", "ns", "a", `{}`),
				widget("example.com/v1", "ns", "ok", `{"owner": "me"}`),
				widget("example.com/v1", "ns", "b", `{}`),
				widget("example.com/v1", "ns", "c", `{}`),
			},
			limit: 2,
			want: []ObjectFailure{
				{Namespace: "ns", Name: "a", Version: "v1", Reason: FailureSchemaInvalid, Message: "spec.owner: Required value"},
				{Namespace: "ns", Name: "b", Version: "v1", Reason: FailureSchemaInvalid, Message: "spec.owner: Required value"},
			},
		},
		{
			name: "no limit",
			crd:  newCRD(version("v1", newSpec)),
			objs: []unstructured.Unstructured{
				widget("example.com/v1", "ns", "a", `{}`),
				widget("example.com/v1", "ns", "b", `{}`),
				widget("example.com/v1", "ns", "c", `{}`),
			},
			want: []ObjectFailure{
				{Namespace: "ns", Name: "a", Version: "v1", Reason: FailureSchemaInvalid, Message: "spec.owner: Required value"},
				{Namespace: "ns", Name: "b", Version: "v1", Reason: FailureSchemaInvalid, Message: "spec.owner: Required value"},
				{Namespace: "ns", Name: "c", Version: "v1", Reason: FailureSchemaInvalid, Message: "spec.owner: Required value"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ValidateExisting(tt.crd, tt.objs, tt.limit)
			if err != nil {
				t.Fatalf("ValidateExisting() error = %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ValidateExisting() =\n%#v\nwant\n%#v", got, tt.want)
			}
		})
	}
}

// TestValidateExistingErrors checks input the function refuses.
func TestValidateExistingErrors(t *testing.T) {
	crd := newCRD(version("v1", object(props{"a": str()})))
	tests := []struct {
		name    string
		crd     *apiextensionsv1.CustomResourceDefinition
		obj     unstructured.Unstructured
		wantErr string
	}{
		{"nil CRD", nil, widget("example.com/v1", "ns", "w", `{}`), "no CRD given"},
		{"other group", crd, widget("other.io/v1", "ns", "w", `{}`), `Widget ns/w against CRD widgets.example.com: apiVersion "other.io/v1" is not of group "example.com"`},
		{"bad apiVersion", crd, widget("a/b/c", "ns", "w", `{}`), "parse apiVersion"},
		{"unsupported schema field", newCRD(version("v1", object(props{"a": {Type: "string", ID: "x"}}))), widget("example.com/v1", "ns", "w", `{}`), "version v1: build structural schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ValidateExisting(tt.crd, []unstructured.Unstructured{tt.obj}, 0)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ValidateExisting() error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

// TestValidateExistingLeavesObjectsAlone checks that defaulting works on a
// copy.
func TestValidateExistingLeavesObjectsAlone(t *testing.T) {
	crd := newCRD(version("v1", object(props{"tier": withDefault(str(), `"gold"`)})))
	obj := widget("example.com/v1", "ns", "w", `{"n": 1}`)
	before := obj.DeepCopy()
	if _, err := ValidateExisting(crd, []unstructured.Unstructured{obj}, 0); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(obj.Object, before.Object) {
		t.Errorf("object changed: %v, was %v", obj.Object, before.Object)
	}
}

// TestObjectFailureString checks the rendering of failures.
func TestObjectFailureString(t *testing.T) {
	tests := []struct {
		failure ObjectFailure
		want    string
	}{
		{ObjectFailure{Namespace: "ns", Name: "w1", Version: "v1", Reason: FailureSchemaInvalid, Message: `spec.mode: Unsupported value: "fast"`},
			`existing object ns/w1 (v1) fails the new schema: spec.mode: Unsupported value: "fast"`},
		{ObjectFailure{Name: "w1", Version: "v1beta1", Reason: FailureVersionRemoved, Message: "version v1beta1 is no longer served"},
			"existing object w1 (v1beta1): version v1beta1 is no longer served"},
	}
	for _, tt := range tests {
		if got := tt.failure.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}
