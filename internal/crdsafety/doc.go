// Package crdsafety decides whether an installed CustomResourceDefinition
// can safely be replaced by a new version of it, judged by what exists: a
// change is unsafe only when it breaks custom resources that are stored,
// or a version objects are stored or read in. A schema change of a CRD
// with no custom resources is safe.
//
// Check is a pipeline, in order:
//
//  1. Compare the installed CRD with the new one. Its Changes (a field
//     removed or newly required, a bound tightened, ...) refuse nothing by
//     themselves; they explain the findings below.
//  2. CRD-wide findings: a version in status.storedVersions removed from
//     spec.versions (StoredVersionRemoved) is always a finding; a served
//     version removed or no longer served (ServedVersionDropped), a scope
//     change (ScopeChanged) or a kind change (KindChanged) is one when at
//     least one object exists.
//  3. For each version served by both CRDs whose schema changed, list the
//     existing objects at that version through the API server, page by
//     page, and judge each against the installed and the new schema of the
//     version with the API server's own libraries (structural pruning,
//     defaulting and the OpenAPI schema validator of
//     k8s.io/apiextensions-apiserver), status included: an error the new
//     schema finds and the installed one does not is an Invalid finding at
//     that field; a value the new schema prunes and the installed one kept
//     is a Pruned finding. An object already invalid before is not blamed
//     on the change.
//  4. Drop the findings the user accepted (Options.Accepted, by ID) and
//     format the rest (Result.Message), naming the CRD, each finding's ID,
//     the schema change that explains it and the first objects affected.
//
// # Bounds
//
// Check reads at most Options.MaxObjects objects (DefaultMaxObjects, 1000)
// at each version whose schema changed, in pages of Options.PageSize, and
// stops once Options.MaxFailingObjects (100) objects failed; Result.Partial
// then says what was left unchecked, and the findings say "at least N
// more". Objects past the bound are not checked: a change that breaks
// only them is applied.
//
// # Finding IDs
//
// A finding's ID does not depend on which objects it affects, so it can be
// accepted before or after more objects appear: "Invalid:v1:.spec.color",
// "Pruned:v1:.status.conditions[*].lastHeartbeatTime" (array indices are
// "[*]", map keys ".*"), "StoredVersionRemoved:v1beta1",
// "ServedVersionDropped:v1beta1", "ScopeChanged", "KindChanged".
//
// # What is not checked
//
// CEL rules (x-kubernetes-validations) are not evaluated, nor are
// validating webhooks or admission policies. Clients that still send old
// values, and objects past the bounds, are not seen. Objects are read at
// each changed version, so a conversion webhook is called as for any read.
//
// # What Compare reports
//
// CRD-wide: spec.scope and spec.names.kind changes, and every version in
// the installed status.storedVersions missing from spec.versions.
//
// For each version present in both CRDs the openAPIV3Schemas are walked
// together through properties, items and additionalProperties, and a
// change is reported when some value the old schema accepted or kept may
// be refused or pruned by the new one:
//
//   - a property is removed, unless the new level keeps unknown fields
//     (x-kubernetes-preserve-unknown-fields, additionalProperties: true) or
//     has an additionalProperties schema, which is then compared instead;
//   - a level stops keeping unknown fields, or loses its additionalProperties
//     schema (map entries would be pruned);
//   - a field is newly required, even when the new schema defaults it;
//   - the type changes (integer to number and integer or string to
//     x-kubernetes-int-or-string are widenings, and dropping the type of an
//     x-kubernetes-preserve-unknown-fields field is allowed); a format is
//     added or changed (removing it is allowed). The walk does not descend
//     below a type change;
//   - an enum is added, or loses values (enum values compare as JSON);
//   - maximum, maxLength, maxItems or maxProperties is added or lowered,
//     minimum is added or raised, minLength, minItems or minProperties is
//     raised, or exclusiveMaximum/exclusiveMinimum is turned on at the same
//     bound.
//
// CEL rules, pattern, multipleOf, uniqueItems, nullable,
// allOf/anyOf/oneOf/not, list and map types and keys, embedded resources,
// defaults, subresources, printer columns and conversion settings are not
// compared; the validator still finds objects a new pattern or bound
// refuses, the finding's message then being generic.
package crdsafety
