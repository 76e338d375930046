package review

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rukpak/rukpak/internal/apply"
)

// key identifies an object across API versions.
type key struct {
	group, kind, namespace, name string
}

// groupKind returns the group and kind of k.
func (k key) groupKind() schema.GroupKind { return schema.GroupKind{Group: k.group, Kind: k.kind} }

// object is one rendered object, placed.
type object struct {
	key key
	obj *unstructured.Unstructured
	// resource is the plural resource of the object's kind.
	resource string
	// namespaced is false for cluster-scoped kinds.
	namespaced bool
}

// revision is a revision's objects, placed, in render order.
type revision struct {
	order []*object
	byKey map[key]*object
}

// kinds maps kinds to resources and scope.
type kinds struct {
	mapper meta.RESTMapper
	bundle map[schema.GroupKind]apply.BundleKind
}

// newKinds returns kinds answering from mapper, else from the CRDs of the
// revisions (the new revision's first).
func newKinds(mapper meta.RESTMapper, revisions ...[]*unstructured.Unstructured) (kinds, error) {
	k := kinds{mapper: mapper, bundle: map[schema.GroupKind]apply.BundleKind{}}
	for i := len(revisions) - 1; i >= 0; i-- {
		defs, err := apply.BundleKinds(revisions[i])
		if err != nil {
			return kinds{}, fmt.Errorf("reading the CRDs of the revisions: %w", err)
		}
		for gk, def := range defs {
			k.bundle[gk] = def
		}
	}
	return k, nil
}

// lookup returns the resource and scope of gvk.
func (k kinds) lookup(gvk schema.GroupVersionKind) (resource string, namespaced bool, err error) {
	if k.mapper != nil {
		m, err := k.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err == nil {
			return m.Resource.Resource, m.Scope.Name() == meta.RESTScopeNameNamespace, nil
		}
		if !meta.IsNoMatchError(err) {
			return "", false, fmt.Errorf("looking up kind %s: %w", gvk, err)
		}
	}
	if def, ok := k.bundle[gvk.GroupKind()]; ok && def.Plural != "" {
		return def.Plural, def.Namespaced, nil
	}
	return "", false, fmt.Errorf("kind %s is neither served by the cluster nor defined by a CRD of the revisions", gvk)
}

// place keys objs: namespaced objects without a namespace go to
// installNamespace, cluster-scoped ones lose any namespace. An object
// twice is an error, as it is for the apply engine.
func place(objs []*unstructured.Unstructured, k kinds, installNamespace string) (*revision, error) {
	r := &revision{byKey: map[key]*object{}}
	for _, u := range objs {
		gvk := u.GroupVersionKind()
		resource, namespaced, err := k.lookup(gvk)
		if err != nil {
			return nil, err
		}
		ns := ""
		if namespaced {
			ns = u.GetNamespace()
			if ns == "" {
				ns = installNamespace
			}
		}
		o := &object{key: key{group: gvk.Group, kind: gvk.Kind, namespace: ns, name: u.GetName()}, obj: u, resource: resource, namespaced: namespaced}
		if _, dup := r.byKey[o.key]; dup {
			return nil, fmt.Errorf("%s is in the revision twice", o.key)
		}
		r.byKey[o.key] = o
		r.order = append(r.order, o)
	}
	return r, nil
}

// String returns "Kind namespace/name" or "Kind name".
func (k key) String() string {
	s := k.kind
	if k.group != "" {
		s += "." + k.group
	}
	if k.namespace != "" {
		return s + " " + k.namespace + "/" + k.name
	}
	return s + " " + k.name
}

// pair is an object of either revision with its state before and after
// the new revision is applied.
type pair struct {
	key key
	// before is the active revision's object, else the live object of a
	// new object, else nil.
	before *unstructured.Unstructured
	// fromLive says before is the live object.
	fromLive bool
	// after is the new revision's object; nil for a removed one.
	after *unstructured.Unstructured
	// placed is the new revision's object, else the active one's.
	placed *object
}

// pairs are every object of both revisions: the new revision's in render
// order, then the removed ones in the active revision's order.
type pairs struct {
	list []*pair
	// owned holds the key of every object of either revision.
	owned map[key]*pair
}

// pairUp pairs the objects of next with their baselines: active's object,
// else the live object.
func pairUp(ctx context.Context, live Live, active, next *revision) (*pairs, error) {
	ps := &pairs{owned: map[key]*pair{}}
	add := func(p *pair) {
		ps.list = append(ps.list, p)
		ps.owned[p.key] = p
	}
	for _, o := range next.order {
		p := &pair{key: o.key, after: o.obj, placed: o}
		if a, ok := active.byKey[o.key]; ok {
			p.before = a.obj
		} else {
			u, err := getLive(ctx, live, o.obj.GroupVersionKind(), o.key.namespace, o.key.name)
			if err != nil {
				return nil, err
			}
			p.before, p.fromLive = u, u != nil
		}
		add(p)
	}
	for _, o := range active.order {
		if _, ok := next.byKey[o.key]; !ok {
			add(&pair{key: o.key, before: o.obj, placed: o})
		}
	}
	return ps, nil
}

// getLive reads one live object; nil when live is nil or there is none.
func getLive(ctx context.Context, live Live, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	if live == nil {
		return nil, nil
	}
	u, err := live.Get(ctx, gvk, namespace, name)
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil, nil
	}
	if err != nil {
		k := key{group: gvk.Group, kind: gvk.Kind, namespace: namespace, name: name}
		return nil, fmt.Errorf("reading live %s: %w", k, err)
	}
	return u, nil
}
