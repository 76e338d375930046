package crdsafety

import "strings"

// Rule names the kind of difference a Change reports.
type Rule string

const (
	// RuleStoredVersionRemoved: a version listed in the installed CRD's
	// status.storedVersions is missing from the new spec.versions, so objects
	// persisted in that version could no longer be decoded.
	RuleStoredVersionRemoved Rule = "StoredVersionRemoved"
	// RuleScopeChanged: spec.scope changed between Namespaced and Cluster.
	RuleScopeChanged Rule = "ScopeChanged"
	// RuleKindChanged: spec.names.kind changed, so existing objects and
	// clients use a kind the CRD no longer defines.
	RuleKindChanged Rule = "KindChanged"
	// RuleFieldRemoved: a property of the old schema is absent from the new
	// one and the new schema does not keep unknown fields at that level, so
	// its values would be pruned.
	RuleFieldRemoved Rule = "FieldRemoved"
	// RuleUnknownFieldsDropped: the old schema kept unknown fields at a level
	// (x-kubernetes-preserve-unknown-fields or an untyped additionalProperties)
	// and the new one does not, so undeclared values would be pruned.
	RuleUnknownFieldsDropped Rule = "UnknownFieldsDropped"
	// RuleRequiredAdded: a field is newly listed in required.
	RuleRequiredAdded Rule = "RequiredAdded"
	// RuleTypeChanged: type (or format) of a field changed in a way that
	// does not accept every old value.
	RuleTypeChanged Rule = "TypeChanged"
	// RuleEnumNarrowed: the new enum misses a value of the old enum, or an
	// enum was added to a field that had none.
	RuleEnumNarrowed Rule = "EnumNarrowed"
	// RuleMaximumTightened: maximum was added or decreased, or
	// exclusiveMaximum was turned on at the same maximum.
	RuleMaximumTightened Rule = "MaximumTightened"
	// RuleMinimumTightened: minimum was added or increased, or
	// exclusiveMinimum was turned on at the same minimum.
	RuleMinimumTightened Rule = "MinimumTightened"
	// RuleMaxLengthTightened: maxLength was added or decreased.
	RuleMaxLengthTightened Rule = "MaxLengthTightened"
	// RuleMinLengthTightened: minLength was increased.
	RuleMinLengthTightened Rule = "MinLengthTightened"
	// RuleMaxItemsTightened: maxItems was added or decreased.
	RuleMaxItemsTightened Rule = "MaxItemsTightened"
	// RuleMinItemsTightened: minItems was increased.
	RuleMinItemsTightened Rule = "MinItemsTightened"
	// RuleMaxPropertiesTightened: maxProperties was added or decreased.
	RuleMaxPropertiesTightened Rule = "MaxPropertiesTightened"
	// RuleMinPropertiesTightened: minProperties was increased.
	RuleMinPropertiesTightened Rule = "MinPropertiesTightened"
)

// Change is one difference between an installed CRD and its replacement
// that can refuse or prune a value the installed one accepted. Whether it
// does depends on the existing objects: Check turns changes into Findings
// only where they break some, and uses a change's Message to explain
// them.
type Change struct {
	// Version is the CRD version the change is about; empty for CRD-wide
	// changes such as a scope change.
	Version string
	// Path is the JSON path of the field inside the version's schema, e.g.
	// ".spec.replicas"; "." is the schema root, "[*]" an array item and ".*"
	// a map value. Empty when the change is not about a field.
	Path string
	// Rule is the kind of difference.
	Rule Rule
	// Message says in words what changed, old value before new.
	Message string
}

// String renders the change as "version v1 field .spec.size: message",
// leaving out the version or field part when it is empty.
func (f Change) String() string {
	var b strings.Builder
	if f.Version != "" {
		b.WriteString("version ")
		b.WriteString(f.Version)
	}
	if f.Path != "" {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("field ")
		b.WriteString(f.Path)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString(f.Message)
	return b.String()
}
