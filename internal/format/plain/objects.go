package plain

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/format"
	"github.com/rukpak/rukpak/pkg/failure"
)

// location names where a document or object was found.
type location struct {
	// path is the file, relative to the bundle root.
	path string
	// doc is the 1-based index of the document in the file.
	doc int
	// line is the 1-based line of the file the document starts at, or 0
	// for an object built by kustomize, whose doc is its position in the
	// build's output.
	line int
	// item is the 0-based index in a List's items, or -1.
	item int
}

// String returns "manifests/a.yaml: document 2 (line 7)" and, for a List
// item, ": items[3]" after it. An object built by kustomize has no line:
// "kustomization.yaml: built object 2".
func (l location) String() string {
	if l.line == 0 {
		return fmt.Sprintf("%s: built object %d", l.path, l.doc)
	}
	s := fmt.Sprintf("%s: document %d (line %d)", l.path, l.doc, l.line)
	if l.item >= 0 {
		s += fmt.Sprintf(": items[%d]", l.item)
	}
	return s
}

// collector gathers the objects of a bundle, checking them as they come.
type collector struct {
	limits Limits
	// installNamespace is where objects without a namespace land, to find
	// duplicates.
	installNamespace string
	// total is the bytes of manifest files read so far.
	total int64
	// documents is the non-empty YAML documents split off so far.
	documents int
	objects   []*unstructured.Unstructured
	seen      map[format.ObjectKey]location
}

// newCollector returns an empty collector.
func newCollector(limits Limits, installNamespace string) *collector {
	return &collector{limits: limits, installNamespace: installNamespace, seen: map[format.ObjectKey]location{}}
}

// add adds the objects of a decoded document: the document itself, or the
// items of a List.
func (c *collector) add(loc location, v any) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return invalid(loc, "not an object but %s", format.Describe(v))
	}
	if !isList(obj) {
		return c.addObject(loc, obj)
	}
	items, ok := obj["items"].([]any)
	if !ok && obj["items"] != nil {
		return invalid(loc, "items of %s is %s, not a list", obj["kind"], format.Describe(obj["items"]))
	}
	for i, item := range items {
		itemLoc := loc
		itemLoc.item = i
		m, ok := item.(map[string]any)
		if !ok {
			return invalid(itemLoc, "not an object but %s", format.Describe(item))
		}
		if err := c.addObject(itemLoc, m); err != nil {
			return err
		}
	}
	return nil
}

// isList reports whether obj is a List whose items are the objects.
func isList(obj map[string]any) bool {
	kind, _ := obj["kind"].(string)
	_, hasItems := obj["items"]
	return kind == "List" || (strings.HasSuffix(kind, "List") && hasItems)
}

// addObject checks one object and appends it.
func (c *collector) addObject(loc location, obj map[string]any) error {
	key, err := keyOf(loc, obj)
	if err != nil {
		return err
	}
	seenKey := key
	if seenKey.Namespace == "" {
		// Whatever the kind's scope, "" and the install namespace name the
		// same object once the apply engine has placed it.
		seenKey.Namespace = c.installNamespace
	}
	if first, ok := c.seen[seenKey]; ok {
		a, b := first.path, loc.path
		if a == b {
			a, b = first.String(), loc.String()
		}
		return failure.New(v1alpha2.ReasonInvalidContent, "object %s defined twice: in %s and %s", key, a, b)
	}
	if len(c.objects) >= c.limits.MaxObjects {
		return failure.New(v1alpha2.ReasonInvalidContent,
			"%s: bundle has more than %d objects, the limit per bundle", loc.path, c.limits.MaxObjects)
	}
	c.seen[seenKey] = loc
	c.objects = append(c.objects, &unstructured.Unstructured{Object: obj})
	return nil
}

// keyOf checks that obj has apiVersion, kind and metadata.name and returns
// its key.
func keyOf(loc location, obj map[string]any) (format.ObjectKey, error) {
	apiVersion, err := requiredString(loc, obj, "apiVersion")
	if err != nil {
		return format.ObjectKey{}, err
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return format.ObjectKey{}, invalid(loc, "invalid apiVersion %q", apiVersion)
	}
	kind, err := requiredString(loc, obj, "kind")
	if err != nil {
		return format.ObjectKey{}, err
	}
	metadata, ok := obj["metadata"].(map[string]any)
	if !ok && obj["metadata"] != nil {
		return format.ObjectKey{}, invalid(loc, "metadata is %s, not an object", format.Describe(obj["metadata"]))
	}
	name, err := requiredString(loc, metadata, "metadata.name")
	if err != nil {
		return format.ObjectKey{}, err
	}
	namespace, ok := metadata["namespace"].(string)
	if !ok && metadata["namespace"] != nil {
		return format.ObjectKey{}, invalid(loc, "metadata.namespace is %s, not a string", format.Describe(metadata["namespace"]))
	}
	return format.ObjectKey{Group: gv.Group, Kind: kind, Namespace: namespace, Name: name}, nil
}

// requiredString returns the non-empty string field of m named by the last
// part of the dotted path field.
func requiredString(loc location, m map[string]any, field string) (string, error) {
	v := m[field[strings.LastIndex(field, ".")+1:]]
	s, ok := v.(string)
	switch {
	case v == nil || (ok && s == ""):
		return "", invalid(loc, "object has no %s", field)
	case !ok:
		return "", invalid(loc, "%s is %s, not a string", field, format.Describe(v))
	}
	return s, nil
}

// invalid returns an InvalidContent failure about the document at loc.
func invalid(loc location, format string, args ...any) error {
	return failure.New(v1alpha2.ReasonInvalidContent, "%s: %s", loc, fmt.Sprintf(format, args...))
}
