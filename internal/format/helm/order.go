package helm

import (
	"sort"

	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/format"
	"github.com/rukpak/rukpak/pkg/failure"
)

// collector gathers a chart's objects by kind of origin.
type collector struct {
	limits Limits
	// installNamespace is where objects without a namespace land, to find
	// duplicates.
	installNamespace string
	// crds, manifests and hooks are the objects of crds/ directories, the
	// rendered objects that are not hooks, and the installed hooks.
	crds, manifests, hooks []*object
	seen                   map[format.ObjectKey]source
}

// ordered returns the objects in install order, refusing duplicates and
// too many objects.
func (c *collector) ordered() ([]*unstructured.Unstructured, error) {
	sortByKind(c.manifests)
	sortByKind(c.hooks)
	sort.SliceStable(c.hooks, func(i, j int) bool {
		a, b := c.hooks[i], c.hooks[j]
		if a.weight != b.weight {
			return a.weight < b.weight
		}
		return a.obj.GetName() < b.obj.GetName()
	})
	n := len(c.crds) + len(c.manifests) + len(c.hooks)
	if n > c.limits.MaxObjects {
		return nil, failure.New(v1alpha2.ReasonInvalidContent,
			"chart renders to %d objects, over the limit of %d", n, c.limits.MaxObjects)
	}
	out := make([]*unstructured.Unstructured, 0, n)
	for _, group := range [][]*object{c.crds, c.manifests, c.hooks} {
		for _, o := range group {
			if err := c.add(o); err != nil {
				return nil, err
			}
			out = append(out, o.obj)
		}
	}
	return out, nil
}

// add refuses o when another object has its group, kind, namespace and
// name.
func (c *collector) add(o *object) error {
	gvk := o.obj.GroupVersionKind()
	key := format.ObjectKey{Group: gvk.Group, Kind: gvk.Kind, Namespace: o.obj.GetNamespace(), Name: o.obj.GetName()}
	seenKey := key
	if seenKey.Namespace == "" {
		// Whatever the kind's scope, "" and the install namespace name the
		// same object once the apply engine has placed it.
		seenKey.Namespace = c.installNamespace
	}
	if first, ok := c.seen[seenKey]; ok {
		a, b := first.file, o.src.file
		if a == b {
			a, b = first.String(), o.src.String()
		}
		return failure.New(v1alpha2.ReasonInvalidContent, "object %s defined twice: in %s and %s", key, a, b)
	}
	c.seen[seenKey] = o.src
	return nil
}

// sortByKind orders objs by Helm's install order of kinds, kinds Helm
// does not know last and alphabetically, keeping the order of objects of
// one kind.
func sortByKind(objs []*object) {
	rank := make(map[string]int, len(releaseutil.InstallOrder))
	for i, k := range releaseutil.InstallOrder {
		rank[k] = i
	}
	sort.SliceStable(objs, func(i, j int) bool {
		a, b := objs[i].obj.GetKind(), objs[j].obj.GetKind()
		ra, aKnown := rank[a]
		rb, bKnown := rank[b]
		switch {
		case aKnown && bKnown:
			return ra < rb
		case aKnown != bKnown:
			return aKnown
		}
		return a < b
	})
}
