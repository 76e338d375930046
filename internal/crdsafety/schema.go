package crdsafety

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// walker compares two openAPIV3Schemas of one CRD version and collects the
// changes in walk order.
type walker struct {
	version string
	changes []Change
}

// add records a change at path.
func (w *walker) add(path string, rule Rule, format string, args ...any) {
	w.changes = append(w.changes, Change{
		Version: w.version,
		Path:    path,
		Rule:    rule,
		Message: fmt.Sprintf(format, args...),
	})
}

// compare checks the schema node n that replaces o at path, then walks
// into properties, items and additionalProperties. It does not descend
// below a type change: the children of values of another type cannot be
// compared meaningfully.
func (w *walker) compare(path string, o, n *apiextensionsv1.JSONSchemaProps) {
	if !w.compareType(path, o, n) {
		return
	}
	w.compareEnum(path, o, n)
	w.compareBounds(path, o, n)
	w.compareRequired(path, o, n)
	w.compareProperties(path, o, n)
	w.compareAdditionalProperties(path, o, n)
	w.compareItems(path, o, n)
}

// compareType reports a type or format change and returns false when the
// type changed incompatibly.
func (w *walker) compareType(path string, o, n *apiextensionsv1.JSONSchemaProps) bool {
	oldType, newType := typeName(o), typeName(n)
	if !typeAccepts(oldType, newType) {
		w.add(path, RuleTypeChanged, "type changed from %s to %s", displayType(oldType), displayType(newType))
		return false
	}
	switch {
	case n.Format == "" || o.Format == n.Format:
	case o.Format == "":
		w.add(path, RuleTypeChanged, "format %s added", n.Format)
	default:
		w.add(path, RuleTypeChanged, "format changed from %s to %s", o.Format, n.Format)
	}
	return true
}

// typeName is the effective type of s: its type, or "int-or-string" for
// x-kubernetes-int-or-string.
func typeName(s *apiextensionsv1.JSONSchemaProps) string {
	if s.XIntOrString {
		return "int-or-string"
	}
	return s.Type
}

// displayType names a type for messages; an empty type means any value.
func displayType(t string) string {
	if t == "" {
		return "untyped"
	}
	return t
}

// typeAccepts reports whether every value valid for oldType is still valid
// for newType.
func typeAccepts(oldType, newType string) bool {
	switch {
	case oldType == newType, newType == "":
		return true
	case newType == "number":
		return oldType == "integer"
	case newType == "int-or-string":
		return oldType == "integer" || oldType == "string"
	}
	return false
}

// compareEnum reports enum values the new schema no longer allows, or an
// enum added where there was none.
func (w *walker) compareEnum(path string, o, n *apiextensionsv1.JSONSchemaProps) {
	if len(n.Enum) == 0 {
		return
	}
	newValues := enumValues(n.Enum)
	if len(o.Enum) == 0 {
		w.add(path, RuleEnumNarrowed, "enum [%s] added", strings.Join(newValues, ", "))
		return
	}
	allowed := make(map[string]bool, len(newValues))
	for _, v := range newValues {
		allowed[v] = true
	}
	var missing []string
	for _, v := range enumValues(o.Enum) {
		if !allowed[v] {
			missing = append(missing, v)
		}
	}
	if len(missing) > 0 {
		w.add(path, RuleEnumNarrowed, "enum no longer allows %s", strings.Join(missing, ", "))
	}
}

// compareRequired reports fields newly listed in required.
func (w *walker) compareRequired(path string, o, n *apiextensionsv1.JSONSchemaProps) {
	was := make(map[string]bool, len(o.Required))
	for _, name := range o.Required {
		was[name] = true
	}
	names := append([]string(nil), n.Required...)
	sort.Strings(names)
	for i, name := range names {
		if was[name] || (i > 0 && names[i-1] == name) {
			continue
		}
		if _, existed := o.Properties[name]; existed {
			w.add(childPath(path, name), RuleRequiredAdded, "optional field became required")
		} else {
			w.add(childPath(path, name), RuleRequiredAdded, "new required field")
		}
	}
}

// compareProperties walks the old properties in name order; a property the
// new schema lacks is compared with the new additionalProperties schema if
// there is one, allowed if unknown fields are kept, and reported otherwise.
func (w *walker) compareProperties(path string, o, n *apiextensionsv1.JSONSchemaProps) {
	names := make([]string, 0, len(o.Properties))
	for name := range o.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		op := o.Properties[name]
		child := childPath(path, name)
		if np, ok := n.Properties[name]; ok {
			w.compare(child, &op, &np)
			continue
		}
		switch {
		case mapSchema(n) != nil:
			w.compare(child, &op, mapSchema(n))
		case keepsUnknown(n):
		default:
			w.add(child, RuleFieldRemoved, "field removed; existing values would be pruned")
		}
	}
}

// compareAdditionalProperties compares map value schemas and reports a
// level that stops keeping undeclared fields.
func (w *walker) compareAdditionalProperties(path string, o, n *apiextensionsv1.JSONSchemaProps) {
	oldMap, newMap := mapSchema(o), mapSchema(n)
	switch {
	case oldMap != nil && newMap != nil:
		w.compare(childPath(path, "*"), oldMap, newMap)
	case oldMap != nil && !keepsUnknown(n):
		w.add(childPath(path, "*"), RuleFieldRemoved,
			"additionalProperties removed; map entries not declared in properties would be pruned")
	case keepsUnknown(o) && newMap == nil && !keepsUnknown(n):
		w.add(path, RuleUnknownFieldsDropped, "unknown fields are no longer preserved; undeclared values would be pruned")
	}
}

// compareItems compares the item schemas of arrays.
func (w *walker) compareItems(path string, o, n *apiextensionsv1.JSONSchemaProps) {
	if o.Items == nil || o.Items.Schema == nil || n.Items == nil || n.Items.Schema == nil {
		return
	}
	w.compare(path+"[*]", o.Items.Schema, n.Items.Schema)
}

// mapSchema returns the additionalProperties schema of s, or nil.
func mapSchema(s *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
	if s.AdditionalProperties == nil {
		return nil
	}
	return s.AdditionalProperties.Schema
}

// keepsUnknown reports whether s keeps fields it does not declare, through
// x-kubernetes-preserve-unknown-fields or additionalProperties: true.
func keepsUnknown(s *apiextensionsv1.JSONSchemaProps) bool {
	if s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields {
		return true
	}
	ap := s.AdditionalProperties
	return ap != nil && ap.Schema == nil && ap.Allows
}

// childPath appends a property name to a JSON path; names that would make
// the path ambiguous are quoted in brackets.
func childPath(path, name string) string {
	if name == "" || strings.ContainsAny(name, ".[]\" ") {
		if path == "." {
			path = ""
		}
		return path + "[" + strconv.Quote(name) + "]"
	}
	if path == "." {
		return "." + name
	}
	return path + "." + name
}
