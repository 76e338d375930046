package objdiff

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// serverMetadata are the fields of metadata the API server sets for
// itself: they change on every write, or never, and say nothing about
// what applying changes.
var serverMetadata = []string{"managedFields", "resourceVersion", "generation", "uid", "creationTimestamp", "selfLink"}

// Normalize returns a copy of obj without the fields of metadata the API
// server keeps for itself (serverMetadata) and without status, which an
// apply of the object does not write. A nil obj (no object) stays nil.
func Normalize(obj *unstructured.Unstructured) *unstructured.Unstructured {
	if obj == nil {
		return nil
	}
	out := obj.DeepCopy()
	for _, f := range serverMetadata {
		unstructured.RemoveNestedField(out.Object, "metadata", f)
	}
	if md, ok := out.Object["metadata"].(map[string]any); ok && len(md) == 0 {
		delete(out.Object, "metadata")
	}
	delete(out.Object, "status")
	return out
}
