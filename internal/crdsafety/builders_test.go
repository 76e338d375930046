package crdsafety

import (
	"encoding/json"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Small builders for CRDs, schemas and objects used by the tests.

type props = map[string]apiextensionsv1.JSONSchemaProps

// newCRD returns widgets.example.com with the given versions, all served,
// the first one stored and listed in status.storedVersions.
func newCRD(versions ...apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Kind: "Widget", ListKind: "WidgetList", Plural: "widgets", Singular: "widget",
			},
			Scope:    apiextensionsv1.NamespaceScoped,
			Versions: versions,
		},
	}
	if len(versions) > 0 {
		crd.Spec.Versions[0].Storage = true
		crd.Status.StoredVersions = []string{versions[0].Name}
	}
	return crd
}

// version returns a served CRD version whose root schema has the usual
// apiVersion, kind and metadata plus the given spec schema.
func version(name string, spec apiextensionsv1.JSONSchemaProps) apiextensionsv1.CustomResourceDefinitionVersion {
	return apiextensionsv1.CustomResourceDefinitionVersion{
		Name:   name,
		Served: true,
		Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: root(spec)},
	}
}

// root wraps a spec schema into a CR root schema.
func root(spec apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
	return &apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: props{
			"apiVersion": {Type: "string"},
			"kind":       {Type: "string"},
			"metadata":   {Type: "object"},
			"spec":       spec,
		},
	}
}

// withStatus returns v with a status schema beside its spec.
func withStatus(v apiextensionsv1.CustomResourceDefinitionVersion, status apiextensionsv1.JSONSchemaProps) apiextensionsv1.CustomResourceDefinitionVersion {
	v.Schema.OpenAPIV3Schema.Properties["status"] = status
	v.Subresources = &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}
	return v
}

// object is an object schema with the given properties and required names.
func object(p props, required ...string) apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{Type: "object", Properties: p, Required: required}
}

// arrayOf is an array schema of item.
func arrayOf(item apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{
		Type:  "array",
		Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &item},
	}
}

// mapOf is a map schema whose values follow value.
func mapOf(value apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{
		Type:                 "object",
		AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &value},
	}
}

// preserving marks s with x-kubernetes-preserve-unknown-fields.
func preserving(s apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	t := true
	s.XPreserveUnknownFields = &t
	return s
}

// str is a string schema.
func str() apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{Type: "string"}
}

// integer is an integer schema.
func integer() apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{Type: "integer"}
}

// intOrString is an x-kubernetes-int-or-string schema.
func intOrString() apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{XIntOrString: true}
}

// enum is a string schema allowing values (given as JSON literals).
func enum(values ...string) apiextensionsv1.JSONSchemaProps {
	s := str()
	for _, v := range values {
		s.Enum = append(s.Enum, apiextensionsv1.JSON{Raw: []byte(v)})
	}
	return s
}

// withDefault sets a JSON default on s.
func withDefault(s apiextensionsv1.JSONSchemaProps, value string) apiextensionsv1.JSONSchemaProps {
	s.Default = &apiextensionsv1.JSON{Raw: []byte(value)}
	return s
}

// f64 and i64 return pointers for bounds.
func f64(v float64) *float64 { return &v }
func i64(v int64) *int64     { return &v }

// withLength sets minLength and maxLength on s (nil leaves one unset).
func withLength(s apiextensionsv1.JSONSchemaProps, minLen, maxLen *int64) apiextensionsv1.JSONSchemaProps {
	s.MinLength, s.MaxLength = minLen, maxLen
	return s
}

// oldConditions is the status of a kubebuilder operator before it moved
// to metav1.Condition: conditions of its own type (type and status
// required, a heartbeat time), as SnapScheduler 3.4 had.
func oldConditions() apiextensionsv1.JSONSchemaProps {
	return object(props{
		"conditions": arrayOf(object(props{
			"type":               str(),
			"status":             str(),
			"reason":             str(),
			"message":            str(),
			"lastHeartbeatTime":  {Type: "string", Format: "date-time"},
			"lastTransitionTime": {Type: "string", Format: "date-time"},
		}, "status", "type")),
		"lastSnapshotTime": {Type: "string", Format: "date-time"},
	})
}

// newConditions is the same status with conditions of metav1.Condition's
// generated schema: every field but observedGeneration required, the
// heartbeat gone, type and reason bounded.
func newConditions() apiextensionsv1.JSONSchemaProps {
	return object(props{
		"conditions": arrayOf(object(props{
			"type":               withLength(str(), nil, i64(316)),
			"status":             enum(`"True"`, `"False"`, `"Unknown"`),
			"reason":             withLength(str(), i64(1), i64(1024)),
			"message":            withLength(str(), nil, i64(32768)),
			"lastTransitionTime": {Type: "string", Format: "date-time"},
			"observedGeneration": {Type: "integer", Format: "int64", Minimum: f64(0)},
		}, "lastTransitionTime", "message", "reason", "status", "type")),
		"lastSnapshotTime": {Type: "string", Format: "date-time"},
	})
}

// withStatusJSON sets a JSON status on obj.
func withStatusJSON(obj unstructured.Unstructured, statusJSON string) unstructured.Unstructured {
	var status map[string]any
	if err := json.Unmarshal([]byte(statusJSON), &status); err != nil {
		panic(err)
	}
	obj.Object["status"] = status
	return obj
}

// widget builds a Widget object from a JSON spec in namespace ns ("" for
// cluster-scoped).
func widget(apiVersion, ns, name, specJSON string) unstructured.Unstructured {
	var spec map[string]any
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		panic(err)
	}
	u := unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion,
		"kind":       "Widget",
		"metadata":   map[string]any{"name": name},
		"spec":       spec,
	}}
	if ns != "" {
		u.SetNamespace(ns)
	}
	return u
}

// ids are the IDs of findings.
func ids(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.ID())
	}
	return out
}
