package apply

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldPath is a field of an object, as the keys from the top: through
// maps only.
type FieldPath []string

// ParsePointer parses a JSON pointer (RFC 6901) such as /spec/replicas
// into a FieldPath. "~1" stands for "/" and "~0" for "~" in a key.
func ParsePointer(p string) (FieldPath, error) {
	if !strings.HasPrefix(p, "/") || p == "/" {
		return nil, fmt.Errorf("%q is not a JSON pointer to a field (it must start with / and name one)", p)
	}
	parts := strings.Split(p[1:], "/")
	for i, part := range parts {
		if part == "" {
			return nil, fmt.Errorf("JSON pointer %q has an empty key", p)
		}
		parts[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(part)
	}
	return parts, nil
}

// String formats the path as a JSON pointer.
func (f FieldPath) String() string {
	esc := make([]string, len(f))
	for i, k := range f {
		esc[i] = strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
	}
	return "/" + strings.Join(esc, "/")
}

// IgnoreRule selects objects of a plan whose fields at Paths another
// controller owns once the object exists: Apply sets them when it creates
// the object and afterwards applies whatever the live object holds there
// (or leaves them out when it holds nothing), so it never reverts them.
type IgnoreRule struct {
	// Group and Kind select the objects' kind.
	Group, Kind string
	// Name and Namespace, when set, narrow the selection.
	Name, Namespace string
	// Paths are the fields.
	Paths []FieldPath
}

func (r IgnoreRule) matches(it item) bool {
	return r.Group == it.id.Group && r.Kind == it.id.Kind &&
		(r.Name == "" || r.Name == it.id.Name) && (r.Namespace == "" || r.Namespace == it.id.Namespace)
}

// WithIgnored returns a plan of p's objects with rules (see IgnoreRule),
// and no others, applied to them; p is not changed.
func (p *Plan) WithIgnored(rules []IgnoreRule) *Plan {
	out := *p
	out.items = make([]item, len(p.items))
	for i, it := range p.items {
		it.ignore = nil
		for _, r := range rules {
			if r.matches(it) {
				it.ignore = append(it.ignore, r.Paths...)
			}
		}
		out.items[i] = it
	}
	return &out
}

// AutoscalerRules are the rules a plan's HorizontalPodAutoscalers imply:
// the replicas of each one's scale target (in the autoscaler's namespace)
// belong to the autoscaler.
func (p *Plan) AutoscalerRules() []IgnoreRule {
	var out []IgnoreRule
	for _, it := range p.items {
		if it.id.Group != "autoscaling" || it.id.Kind != "HorizontalPodAutoscaler" {
			continue
		}
		apiVersion, _, _ := unstructured.NestedString(it.obj.Object, "spec", "scaleTargetRef", "apiVersion")
		kind, _, _ := unstructured.NestedString(it.obj.Object, "spec", "scaleTargetRef", "kind")
		name, _, _ := unstructured.NestedString(it.obj.Object, "spec", "scaleTargetRef", "name")
		if kind == "" || name == "" {
			continue
		}
		gv, err := schema.ParseGroupVersion(apiVersion)
		if err != nil {
			continue
		}
		out = append(out, IgnoreRule{Group: gv.Group, Kind: kind, Name: name, Namespace: it.id.Namespace, Paths: []FieldPath{{"spec", "replicas"}}})
	}
	return out
}

// withLiveIgnored returns what to apply of it: its object, with the
// ignored fields as the live object holds them (left out where it holds
// nothing). An object that does not exist yet is applied as it is.
func (e *Engine) withLiveIgnored(ctx context.Context, it item) (*unstructured.Unstructured, error) {
	if len(it.ignore) == 0 {
		return it.obj, nil
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(it.obj.GroupVersionKind())
	err := e.live().Get(ctx, client.ObjectKey{Namespace: it.id.Namespace, Name: it.id.Name}, live)
	if apierrors.IsNotFound(err) {
		return it.obj, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s for the fields other controllers own: %w", it.id, err)
	}
	return keepLive(it.obj, live, it.ignore), nil
}

// keepLive returns a copy of desired whose fields at paths are live's.
func keepLive(desired, live *unstructured.Unstructured, paths []FieldPath) *unstructured.Unstructured {
	out := desired.DeepCopy()
	for _, path := range paths {
		if v, found, err := unstructured.NestedFieldCopy(live.Object, path...); err == nil && found {
			if err := unstructured.SetNestedField(out.Object, v, path...); err == nil {
				continue
			}
		}
		unstructured.RemoveNestedField(out.Object, path...)
	}
	return out
}
