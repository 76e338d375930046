package crdsafety

import (
	"fmt"
	"strings"
)

// Kind is what a Finding says the new CRD breaks.
type Kind string

const (
	// KindInvalid: existing objects, read at a version, pass its installed
	// schema but fail its new one at a field.
	KindInvalid Kind = "Invalid"
	// KindPruned: existing objects hold a value at a field the new schema
	// of their version no longer keeps, so the value would be pruned.
	KindPruned Kind = "Pruned"
	// KindStoredVersionRemoved: a version in the installed CRD's
	// status.storedVersions is missing from the new spec.versions, so
	// objects persisted in it could no longer be read. It is found whether
	// or not objects exist (the API server refuses such a CRD update).
	KindStoredVersionRemoved Kind = "StoredVersionRemoved"
	// KindServedVersionDropped: a served version is removed or no longer
	// served while objects exist, so clients reading them through it
	// break.
	KindServedVersionDropped Kind = "ServedVersionDropped"
	// KindScopeChanged: spec.scope changed while objects exist.
	KindScopeChanged Kind = "ScopeChanged"
	// KindKindChanged: spec.names.kind changed while objects exist.
	KindKindChanged Kind = "KindChanged"
)

// Finding is one way the new CRD breaks what exists. Its ID names it
// stably (it does not depend on which objects are affected), so that a
// user can accept it.
type Finding struct {
	// Kind is what breaks.
	Kind Kind
	// Version is the CRD version concerned; empty for scope and kind
	// changes.
	Version string
	// Path is the field, as a schema path (".status.conditions[*].reason":
	// "[*]" is any array item, ".*" any map value); set for KindInvalid and
	// KindPruned only.
	Path string
	// Message says what changed, e.g. the schema change (see Compare)
	// that explains the failures.
	Message string
	// Objects are the first objects affected, at most
	// Options.MaxObjectsPerFinding.
	Objects []ObjectFailure
	// Count is how many of the checked objects are affected.
	Count int
	// More is set when the check was bounded (see Options) and objects it
	// did not check may be affected too.
	More bool
}

// ID is the finding's stable name: "KIND:VERSION:PATH", "KIND:VERSION" or
// "KIND", e.g. "Invalid:v1:.status.conditions[*].reason".
func (f Finding) ID() string {
	parts := []string{string(f.Kind)}
	if f.Version != "" {
		parts = append(parts, f.Version)
	}
	if f.Path != "" {
		parts = append(parts, f.Path)
	}
	return strings.Join(parts, ":")
}

// String renders the finding for a condition message: its ID in
// brackets, what changed, and the affected objects with "and N more".
func (f Finding) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%s] %s", f.ID(), f.Message)
	if f.Count == 0 {
		return b.String()
	}
	switch f.Kind {
	case KindInvalid:
		b.WriteString("; existing objects failing it: ")
	case KindPruned:
		b.WriteString("; existing objects holding a value there: ")
	default:
		b.WriteString("; existing objects: ")
	}
	names := make([]string, 0, len(f.Objects)+1)
	for _, o := range f.Objects {
		names = append(names, o.String())
	}
	switch more := f.Count - len(f.Objects); {
	case more > 0 && f.More:
		names = append(names, fmt.Sprintf("and at least %d more", more))
	case more > 0:
		names = append(names, fmt.Sprintf("and %d more", more))
	case f.More:
		names = append(names, "and maybe more")
	}
	b.WriteString(strings.Join(names, ", "))
	return b.String()
}

// ObjectFailure is one existing custom resource a Finding affects.
type ObjectFailure struct {
	// Namespace of the object; empty for cluster-scoped objects.
	Namespace string
	// Name of the object.
	Name string
	// Detail is why it fails: the API server's validation error
	// ("status.conditions[0].reason: Required value"), or the field whose
	// value would be pruned; empty for version, scope and kind findings.
	Detail string
}

// String renders the failure as "ns/name (detail)", or "ns/name" without a
// detail.
func (o ObjectFailure) String() string {
	name := o.Name
	if o.Namespace != "" {
		name = o.Namespace + "/" + name
	}
	if o.Detail == "" {
		return name
	}
	return name + " (" + o.Detail + ")"
}
