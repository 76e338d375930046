package registryv1

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// toObject converts a typed object (with TypeMeta set) to an unstructured
// one, without the null creationTimestamp typed metadata carries.
func toObject(obj runtime.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %T: %w", obj, err)
	}
	if meta, ok := m["metadata"].(map[string]any); ok {
		if v, ok := meta["creationTimestamp"]; ok && v == nil {
			delete(meta, "creationTimestamp")
		}
	}
	delete(m, "status")
	return &unstructured.Unstructured{Object: m}, nil
}
