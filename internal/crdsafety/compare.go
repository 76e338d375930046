package crdsafety

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Compare returns every difference between the installed CRD oldCRD and
// its replacement newCRD that can refuse or prune a value oldCRD accepted;
// the result is empty when there is none.
//
// Changes come in a fixed order: CRD-wide ones (scope, kind, stored
// versions in status order) first, then per version in the order of
// oldCRD.spec.versions, each walked depth-first with properties sorted by
// name. A nil CRD yields no changes.
func Compare(oldCRD, newCRD *apiextensionsv1.CustomResourceDefinition) []Change {
	if oldCRD == nil || newCRD == nil {
		return nil
	}
	var out []Change
	if oldCRD.Spec.Scope != newCRD.Spec.Scope {
		out = append(out, Change{
			Rule:    RuleScopeChanged,
			Message: fmt.Sprintf("scope changed from %s to %s", oldCRD.Spec.Scope, newCRD.Spec.Scope),
		})
	}
	if oldCRD.Spec.Names.Kind != newCRD.Spec.Names.Kind {
		out = append(out, Change{
			Rule:    RuleKindChanged,
			Message: fmt.Sprintf("kind changed from %s to %s", oldCRD.Spec.Names.Kind, newCRD.Spec.Names.Kind),
		})
	}
	for _, stored := range oldCRD.Status.StoredVersions {
		if findVersion(newCRD, stored) == nil {
			out = append(out, Change{
				Version: stored,
				Rule:    RuleStoredVersionRemoved,
				Message: "version is listed in status.storedVersions but removed from spec.versions",
			})
		}
	}
	for i := range oldCRD.Spec.Versions {
		oldVer := &oldCRD.Spec.Versions[i]
		newVer := findVersion(newCRD, oldVer.Name)
		if newVer == nil {
			// Dropped but never stored: no persisted object uses it.
			continue
		}
		oldSchema, newSchema := versionSchema(oldVer), versionSchema(newVer)
		if oldSchema == nil || newSchema == nil {
			// Nothing to compare against; ValidateExisting still checks
			// existing objects against the new schema.
			continue
		}
		w := walker{version: oldVer.Name}
		w.compare(".", oldSchema, newSchema)
		out = append(out, w.changes...)
	}
	return out
}

// findVersion returns the version called name in crd's spec, or nil.
func findVersion(crd *apiextensionsv1.CustomResourceDefinition, name string) *apiextensionsv1.CustomResourceDefinitionVersion {
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == name {
			return &crd.Spec.Versions[i]
		}
	}
	return nil
}

// versionSchema returns the openAPIV3Schema of v, or nil when it has none.
func versionSchema(v *apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.JSONSchemaProps {
	if v.Schema == nil {
		return nil
	}
	return v.Schema.OpenAPIV3Schema
}
