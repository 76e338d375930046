package objdiff

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Name names an object in a diff header as kubectl diff names its files:
// group (omitted for the core group), version, kind, namespace (empty for
// cluster-scoped objects) and name, joined by dots, e.g.
// apps.v1.Deployment.shop.web or v1.Namespace..shop.
func Name(gvk schema.GroupVersionKind, namespace, name string) string {
	out := gvk.Version + "." + gvk.Kind + "." + namespace + "." + name
	if gvk.Group != "" {
		out = gvk.Group + "." + out
	}
	return out
}
