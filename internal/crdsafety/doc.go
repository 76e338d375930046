// Package crdsafety decides whether an installed CustomResourceDefinition
// can safely be replaced by a new version of it. It is pure: it never talks
// to a cluster, and the caller lists the existing custom resources.
//
// A caller checks a CRD change in order:
//
//  1. Compare the installed CRD with the new one; every Finding is an
//     unsafe difference in the definitions themselves;
//  2. ValidateExisting validates the existing custom resources against the
//     new schema, which catches what the comparison cannot see;
//  3. Report turns findings and failures into one condition message.
//
// # What Compare checks
//
// CRD-wide: spec.scope and spec.names.kind must not change, and every
// version in the installed status.storedVersions must still be in
// spec.versions. Removing a version that was never stored is allowed, and
// so are adding versions and switching served or storage flags (the API
// server itself refuses a CRD without exactly one storage version).
//
// For each version present in both CRDs the openAPIV3Schemas are walked
// together through properties, items and additionalProperties. A change is
// unsafe when some value the old schema accepted or kept is refused or
// pruned by the new one:
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
// Adding optional fields, widening bounds or enums and changing
// descriptions, examples or defaults are safe.
//
// # What Compare does not check
//
// CEL rules (x-kubernetes-validations), pattern, multipleOf, uniqueItems,
// nullable, allOf/anyOf/oneOf/not, list and map types and keys
// (x-kubernetes-list-type, x-kubernetes-list-map-keys,
// x-kubernetes-map-type), x-kubernetes-embedded-resource, tuple-form items,
// defaults, subresources, printer columns and conversion settings are not
// compared: whether their change breaks anything depends on the data.
// ValidateExisting runs the API server's own OpenAPI schema validator, so it
// finds existing objects refused by a new pattern, bound, enum, type or
// required field wherever that validator can see it; it does not evaluate
// CEL rules, and it cannot know about objects the caller did not list or
// clients that still send old values.
package crdsafety
