package crdsafety

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// FailureReason says why an existing object would break under the new CRD.
type FailureReason string

const (
	// FailureSchemaInvalid: the object does not validate against the new
	// schema of its version.
	FailureSchemaInvalid FailureReason = "SchemaInvalid"
	// FailureVersionRemoved: the object's version is not in the new
	// spec.versions at all.
	FailureVersionRemoved FailureReason = "VersionRemoved"
)

// ObjectFailure is one existing custom resource that the new CRD would
// refuse.
type ObjectFailure struct {
	// Namespace of the object; empty for cluster-scoped objects.
	Namespace string
	// Name of the object.
	Name string
	// Version is the CRD version of the object's apiVersion.
	Version string
	// Reason says which check failed.
	Reason FailureReason
	// Message is the first schema error (with a count of the others), or
	// why the version is unusable.
	Message string
}

// String renders the failure as "existing object ns/name (v1) fails the new
// schema: message" or "existing object ns/name (v1beta1): message".
func (f ObjectFailure) String() string {
	if f.Reason == FailureVersionRemoved {
		return fmt.Sprintf("existing object %s (%s): %s", f.objectName(), f.Version, f.Message)
	}
	return fmt.Sprintf("existing object %s (%s) fails the new schema: %s", f.objectName(), f.Version, f.Message)
}

// objectName is namespace/name, or just name for cluster-scoped objects.
func (f ObjectFailure) objectName() string {
	if f.Namespace == "" {
		return f.Name
	}
	return f.Namespace + "/" + f.Name
}

// ValidateExisting validates existing custom resources of newCRD's group
// against the new schema of their apiVersion's version, the way the API
// server would on their next write: defaults of that schema are applied
// first, as the API server does when it reads an object from storage.
//
// An object whose version is missing from newCRD.spec.versions fails with
// FailureVersionRemoved; a version still present but no longer served is
// validated like any other. At most limit failures are returned (all of them
// when limit <= 0), in the order of objs. An error means the input is unusable
// (nil CRD, wrong group, a schema that cannot be built), not that objects
// fail.
func ValidateExisting(newCRD *apiextensionsv1.CustomResourceDefinition, objs []unstructured.Unstructured, limit int) ([]ObjectFailure, error) {
	if newCRD == nil {
		return nil, errors.New("validate existing objects: no CRD given")
	}
	validators := map[string]*versionValidator{}
	var out []ObjectFailure
	for i := range objs {
		if limit > 0 && len(out) >= limit {
			break
		}
		obj := &objs[i]
		failure, err := validateObject(newCRD, obj, validators)
		if err != nil {
			return out, fmt.Errorf("validate %s %s against CRD %s: %w",
				obj.GetKind(), objectKey(obj), newCRD.Name, err)
		}
		if failure != nil {
			out = append(out, *failure)
		}
	}
	return out, nil
}

// validateObject checks one object; validators caches one validator per
// version.
func validateObject(crd *apiextensionsv1.CustomResourceDefinition, obj *unstructured.Unstructured, validators map[string]*versionValidator) (*ObjectFailure, error) {
	gv, err := schema.ParseGroupVersion(obj.GetAPIVersion())
	if err != nil {
		return nil, fmt.Errorf("parse apiVersion: %w", err)
	}
	if gv.Group != crd.Spec.Group {
		return nil, fmt.Errorf("apiVersion %q is not of group %q", obj.GetAPIVersion(), crd.Spec.Group)
	}
	failure := &ObjectFailure{Namespace: obj.GetNamespace(), Name: obj.GetName(), Version: gv.Version}
	v := findVersion(crd, gv.Version)
	if v == nil {
		failure.Reason = FailureVersionRemoved
		failure.Message = fmt.Sprintf("version %s is no longer served", gv.Version)
		return failure, nil
	}
	val, ok := validators[v.Name]
	if !ok {
		if val, err = newVersionValidator(v); err != nil {
			return nil, fmt.Errorf("version %s: %w", v.Name, err)
		}
		validators[v.Name] = val
	}
	msg, err := val.validate(obj.Object)
	if err != nil || msg == "" {
		return nil, err
	}
	failure.Reason = FailureSchemaInvalid
	failure.Message = msg
	return failure, nil
}

// versionValidator validates objects against one version's schema.
type versionValidator struct {
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
}

// newVersionValidator builds the validator the API server would use for v.
// A version without a schema accepts everything.
func newVersionValidator(v *apiextensionsv1.CustomResourceDefinitionVersion) (*versionValidator, error) {
	s := versionSchema(v)
	if s == nil {
		return &versionValidator{}, nil
	}
	internal := &apiextensionsinternal.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(s, internal, nil); err != nil {
		return nil, fmt.Errorf("convert schema to internal version: %w", err)
	}
	structural, err := structuralschema.NewStructural(internal)
	if err != nil {
		return nil, fmt.Errorf("build structural schema: %w", err)
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(internal)
	if err != nil {
		return nil, fmt.Errorf("build schema validator: %w", err)
	}
	return &versionValidator{structural: structural, validator: validator}, nil
}

// validate returns the first schema error of a defaulted copy of content
// (errors sorted by field, then text), or "" when it is valid.
func (vv *versionValidator) validate(content map[string]any) (string, error) {
	if vv.validator == nil {
		return "", nil
	}
	obj, err := copyJSON(content)
	if err != nil {
		return "", err
	}
	structuraldefaulting.Default(obj, vv.structural)
	errs := apiservervalidation.ValidateCustomResource(nil, obj, vv.validator)
	if len(errs) == 0 {
		return "", nil
	}
	sort.SliceStable(errs, func(i, j int) bool {
		if errs[i].Field != errs[j].Field {
			return errs[i].Field < errs[j].Field
		}
		return errs[i].Error() < errs[j].Error()
	})
	return firstError(errs), nil
}

// firstError renders the first error and how many others there are.
func firstError(errs field.ErrorList) string {
	msg := errs[0].Error()
	if more := len(errs) - 1; more == 1 {
		msg += " (and 1 more error)"
	} else if more > 1 {
		msg += fmt.Sprintf(" (and %d more errors)", more)
	}
	return msg
}

// copyJSON deep-copies an object through JSON so that defaulting does not
// touch the caller's object and numbers have the int64/float64 types the
// validator expects, whatever Go types the caller used.
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

// objectKey is namespace/name, or name for cluster-scoped objects.
func objectKey(obj *unstructured.Unstructured) string {
	return ObjectFailure{Namespace: obj.GetNamespace(), Name: obj.GetName()}.objectName()
}
