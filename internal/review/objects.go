package review

import (
	"encoding/base64"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// objectFindings are every object added, changed and removed, unbounded.
type objectFindings struct {
	added     []*pair
	changed   []objectChange
	removed   []*pair
	unchanged int
}

// objectChange is an object and the paths of its fields that change.
type objectChange struct {
	pair  *pair
	paths []string
}

// reviewObjects sorts ps into added, changed, removed and unchanged.
func reviewObjects(ps *pairs) objectFindings {
	var f objectFindings
	for _, p := range ps.list {
		switch {
		case p.after == nil:
			f.removed = append(f.removed, p)
		case p.before == nil:
			f.added = append(f.added, p)
		default:
			paths := changedPaths(comparedFields(p.before, p.key.namespace), comparedFields(p.after, p.key.namespace), p.fromLive)
			if len(paths) == 0 {
				f.unchanged++
				continue
			}
			f.changed = append(f.changed, objectChange{pair: p, paths: paths})
		}
	}
	return f
}

// comparedFields returns the fields of u a review compares: without status
// and the metadata the API server writes, in the namespace it is placed in
// (so that a namespace written out or left to the install namespace is no
// change), and for a Secret with each stringData key folded into data as
// the API server stores it, so that moving a key between the two is no
// change.
func comparedFields(u *unstructured.Unstructured, namespace string) map[string]any {
	m := runtime.DeepCopyJSON(u.Object)
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		for _, f := range []string{"creationTimestamp", "resourceVersion", "uid", "generation", "managedFields", "selfLink", "namespace"} {
			delete(md, f)
		}
		if namespace != "" {
			md["namespace"] = namespace
		}
	}
	if u.GroupVersionKind().GroupKind() == secretGK {
		foldStringData(m)
	}
	return m
}

// foldStringData moves a Secret's stringData into data, base64-encoded.
func foldStringData(m map[string]any) {
	sd, ok := m["stringData"].(map[string]any)
	if !ok {
		return
	}
	delete(m, "stringData")
	data, ok := m["data"].(map[string]any)
	if !ok {
		data = map[string]any{}
		m["data"] = data
	}
	for k, v := range sd {
		if s, ok := v.(string); ok {
			data[k] = base64.StdEncoding.EncodeToString([]byte(s))
		}
	}
}

// reviewObject returns the stored name of o, strings cut to their bounds.
func reviewObject(o *object) v1alpha2.ReviewObject {
	return v1alpha2.ReviewObject{
		Group:     cut(o.key.group, maxName),
		Version:   cut(o.obj.GroupVersionKind().Version, maxShort),
		Kind:      cut(o.key.kind, maxShort),
		Namespace: cut(o.key.namespace, maxShort),
		Name:      cut(o.key.name, maxName),
	}
}

// stored returns f bounded.
func (f objectFindings) stored() v1alpha2.ReviewObjects {
	out := v1alpha2.ReviewObjects{
		AddedCount:     count(len(f.added)),
		ChangedCount:   count(len(f.changed)),
		RemovedCount:   count(len(f.removed)),
		UnchangedCount: count(f.unchanged),
	}
	for _, p := range first(f.added, MaxEntries) {
		out.Added = append(out.Added, reviewObject(p.placed))
	}
	for _, p := range first(f.removed, MaxEntries) {
		out.Removed = append(out.Removed, reviewObject(p.placed))
	}
	for _, c := range first(f.changed, MaxEntries) {
		to := v1alpha2.ReviewComparedToRevision
		if c.pair.fromLive {
			to = v1alpha2.ReviewComparedToLive
		}
		out.Changed = append(out.Changed, v1alpha2.ReviewObjectChange{
			Object:     reviewObject(c.pair.placed),
			ComparedTo: to,
			PathCount:  count(len(c.paths)),
			Paths:      cutAll(first(c.paths, MaxPaths), maxPath),
		})
	}
	return out
}
