package crdsafety

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// prunedValues names, for each removed field of the storage version, the
// existing objects (read at that version) that hold a value there and would
// lose it: ValidateExisting cannot see them, since pruning is not a
// validation error. It names at most limit objects per field.
func prunedValues(crd *apiextensionsv1.CustomResourceDefinition, findings []Finding, objs []unstructured.Unstructured, limit int) []string {
	storage := storageVersion(crd)
	var out []string
	for _, f := range findings {
		if f.Rule != RuleFieldRemoved || f.Version != storage {
			continue
		}
		segs, ok := parsePath(f.Path)
		if !ok {
			continue
		}
		var names []string
		count := 0
		for i := range objs {
			if holdsValue(objs[i].Object, segs) {
				if count++; count <= limit {
					names = append(names, objectName(&objs[i]))
				}
			}
		}
		if count == 0 {
			continue
		}
		if count > limit {
			names = append(names, fmt.Sprintf("and %d more", count-limit))
		}
		out = append(out, fmt.Sprintf("existing objects with a value at %s: %s", f.Path, strings.Join(names, ", ")))
	}
	return out
}

// storageVersion is the name of crd's storage version, "" if none.
func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// parsePath splits a crdsafety path (".spec.items[*].name", ".spec.map.*")
// into property names, with "[*]" for any array item and "*" for any map
// value. Quoted names ("[\"a.b\"]") are not supported: ok is false.
func parsePath(path string) (segs []string, ok bool) {
	for path != "" && path != "." {
		switch {
		case strings.HasPrefix(path, "[*]"):
			segs = append(segs, "[*]")
			path = path[3:]
		case strings.HasPrefix(path, "."):
			end := strings.IndexAny(path[1:], ".[")
			if end < 0 {
				end = len(path) - 1
			}
			if end == 0 {
				return nil, false
			}
			segs = append(segs, path[1:end+1])
			path = path[end+1:]
		default:
			return nil, false
		}
	}
	return segs, len(segs) > 0
}

// holdsValue reports whether v has a value at segs.
func holdsValue(v any, segs []string) bool {
	if len(segs) == 0 {
		return true
	}
	switch seg := segs[0]; seg {
	case "[*]":
		items, _ := v.([]any)
		for _, item := range items {
			if holdsValue(item, segs[1:]) {
				return true
			}
		}
	case "*":
		m, _ := v.(map[string]any)
		for _, item := range m {
			if holdsValue(item, segs[1:]) {
				return true
			}
		}
	default:
		m, _ := v.(map[string]any)
		if item, ok := m[seg]; ok {
			return holdsValue(item, segs[1:])
		}
	}
	return false
}

// objectName is namespace/name, or name for cluster-scoped objects.
func objectName(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}
