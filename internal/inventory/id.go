package inventory

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ID names one managed object. Version is the version it was applied with;
// two IDs that differ only in Version name the same object.
type ID struct {
	// Group is the API group; empty for the core group.
	Group string
	// Version is the API version the object was applied with.
	Version string
	// Kind is the object's kind.
	Kind string
	// Namespace is empty for cluster-scoped objects.
	Namespace string
	// Name is the object's name.
	Name string
}

// GroupVersionKind returns the ID's group, version and kind.
func (id ID) GroupVersionKind() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: id.Group, Version: id.Version, Kind: id.Kind}
}

// Key is the ID without its version: equal keys name the same object.
func (id ID) Key() ID {
	id.Version = ""
	return id
}

// String formats the ID as Kind.group namespace/name, for messages.
func (id ID) String() string {
	kind := id.Kind
	if id.Group != "" {
		kind += "." + id.Group
	}
	if id.Namespace == "" {
		return fmt.Sprintf("%s %s", kind, id.Name)
	}
	return fmt.Sprintf("%s %s/%s", kind, id.Namespace, id.Name)
}

// Stale returns the IDs of a that name objects not in b, in a's order.
func Stale(a, b []ID) []ID {
	in := make(map[ID]struct{}, len(b))
	for _, id := range b {
		in[id.Key()] = struct{}{}
	}
	var out []ID
	for _, id := range a {
		if _, ok := in[id.Key()]; !ok {
			out = append(out, id)
		}
	}
	return out
}

// Sorted returns a sorted copy of ids, so equal sets compare equal.
func Sorted(ids []ID) []ID {
	out := append([]ID(nil), ids...)
	sort.Slice(out, func(i, j int) bool { return less(out[i], out[j]) })
	return out
}

func less(a, b ID) bool {
	switch {
	case a.Group != b.Group:
		return a.Group < b.Group
	case a.Kind != b.Kind:
		return a.Kind < b.Kind
	case a.Namespace != b.Namespace:
		return a.Namespace < b.Namespace
	case a.Name != b.Name:
		return a.Name < b.Name
	}
	return a.Version < b.Version
}
