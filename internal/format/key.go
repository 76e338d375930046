package format

// ObjectKey identifies an object of a bundle as the cluster will: two
// objects with the same key are one object defined twice.
type ObjectKey struct {
	// Group is the API group, "" for the core group.
	Group string
	// Kind is the object's kind.
	Kind string
	// Namespace is the object's namespace, "" for none (yet).
	Namespace string
	// Name is metadata.name.
	Name string
}

// String returns "Kind[.group]/name", and the namespace if there is one.
func (k ObjectKey) String() string {
	s := k.Kind
	if k.Group != "" {
		s += "." + k.Group
	}
	s += "/" + k.Name
	if k.Namespace != "" {
		s += " (namespace " + k.Namespace + ")"
	}
	return s
}

// Describe names the JSON type of a decoded value for messages about
// content: "null", "an object", "a list", "a string", "a boolean" or "a
// number".
func Describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	default:
		return "a number"
	}
}
