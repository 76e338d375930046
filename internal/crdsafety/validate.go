package crdsafety

import (
	"encoding/json"
	"fmt"
	"sort"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validator prunes, defaults and validates objects as the API server does
// for one CRD version's schema. The zero validator (a version without a
// schema) keeps and accepts everything.
type validator struct {
	structural *structuralschema.Structural
	schema     apiservervalidation.SchemaValidator
}

// newValidator builds the validator of v with the apiextensions-apiserver
// libraries: the structural schema for pruning and defaulting, and the
// OpenAPI schema validator.
func newValidator(v *apiextensionsv1.CustomResourceDefinitionVersion) (*validator, error) {
	s := versionSchema(v)
	if s == nil {
		return &validator{}, nil
	}
	internal := &apiextensionsinternal.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(s, internal, nil); err != nil {
		return nil, fmt.Errorf("convert schema of version %s to the internal version: %w", v.Name, err)
	}
	structural, err := structuralschema.NewStructural(internal)
	if err != nil {
		return nil, fmt.Errorf("build structural schema of version %s: %w", v.Name, err)
	}
	schema, _, err := apiservervalidation.NewSchemaValidator(internal)
	if err != nil {
		return nil, fmt.Errorf("build schema validator of version %s: %w", v.Name, err)
	}
	return &validator{structural: structural, schema: schema}, nil
}

// errors returns the schema errors of content as the API server would
// hold it under this schema: a copy pruned and defaulted first. Errors are
// sorted by field, then text.
func (v *validator) errors(content map[string]any) (field.ErrorList, error) {
	if v.schema == nil {
		return nil, nil
	}
	obj, err := copyJSON(content)
	if err != nil {
		return nil, err
	}
	structuralpruning.Prune(obj, v.structural, true)
	structuraldefaulting.Default(obj, v.structural)
	errs := apiservervalidation.ValidateCustomResource(nil, obj, v.schema)
	sort.SliceStable(errs, func(i, j int) bool {
		if errs[i].Field != errs[j].Field {
			return errs[i].Field < errs[j].Field
		}
		return errs[i].Error() < errs[j].Error()
	})
	return errs, nil
}

// pruned returns the paths ("status.conditions[0].lastHeartbeatTime") of
// the values in content this schema would prune, sorted.
func (v *validator) pruned(content map[string]any) ([]string, error) {
	if v.structural == nil {
		return nil, nil
	}
	obj, err := copyJSON(content)
	if err != nil {
		return nil, err
	}
	return structuralpruning.PruneWithOptions(obj, v.structural, true,
		structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}), nil
}

// copyJSON deep-copies an object through JSON so that pruning and
// defaulting do not touch the caller's object and numbers have the
// int64/float64 types the validator expects, whatever Go types the caller
// used.
func copyJSON(content map[string]any) (map[string]any, error) {
	data, err := json.Marshal(content)
	if err != nil {
		return nil, fmt.Errorf("encode object: %w", err)
	}
	var out map[string]any
	if err := utiljson.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("decode object: %w", err)
	}
	return out, nil
}
