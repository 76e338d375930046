package crdsafety

import (
	"strings"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
)

// schemaPath turns the path of a value in an object, as the API server's
// validator ("status.conditions[0].reason", map keys as "[key]") or pruner
// ("spec.labels.key") writes it, into the schema path Compare uses
// (".status.conditions[*].reason", ".spec.labels.*"), following s: array
// indices become "[*]" and map keys ".*", so that the path names the field
// whatever the object. Past the end of s (a pruned field) names are kept.
func schemaPath(raw string, s *structuralschema.Structural) string {
	if raw == "<nil>" {
		raw = ""
	}
	out := "."
	cur := s
	for raw != "" {
		switch raw[0] {
		case '.':
			raw = raw[1:]
		case '[':
			end := strings.IndexByte(raw, ']')
			if end < 0 {
				end = len(raw) - 1
			}
			raw = raw[end+1:]
			if value := mapValue(cur); value != nil || cur != nil && cur.Type == "object" {
				out, cur = childPath(out, "*"), value
			} else {
				out += "[*]"
				cur = items(cur)
			}
		default:
			end := strings.IndexAny(raw, ".[")
			if end < 0 {
				end = len(raw)
			}
			name := raw[:end]
			raw = raw[end:]
			switch {
			case cur == nil:
				out = childPath(out, name)
			case hasProperty(cur, name):
				prop := cur.Properties[name]
				out, cur = childPath(out, name), &prop
			case mapValue(cur) != nil:
				out, cur = childPath(out, "*"), mapValue(cur)
			default:
				out, cur = childPath(out, name), nil
			}
		}
	}
	return out
}

// hasProperty reports whether s declares the property name.
func hasProperty(s *structuralschema.Structural, name string) bool {
	_, ok := s.Properties[name]
	return ok
}

// mapValue is the schema of s's map values, or nil.
func mapValue(s *structuralschema.Structural) *structuralschema.Structural {
	if s == nil || s.AdditionalProperties == nil {
		return nil
	}
	return s.AdditionalProperties.Structural
}

// items is the schema of s's array items, or nil.
func items(s *structuralschema.Structural) *structuralschema.Structural {
	if s == nil {
		return nil
	}
	return s.Items
}
