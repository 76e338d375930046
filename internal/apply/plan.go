package apply

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/rukpak/rukpak/internal/inventory"
)

// Phases of a plan: phaseFirst holds CRDs and Namespaces, which the rest may
// need; phaseRest holds everything else.
const (
	phaseFirst = iota
	phaseRest
)

var (
	crdGK       = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}
	namespaceGK = schema.GroupKind{Kind: "Namespace"}
)

// item is one object of a plan.
type item struct {
	id    inventory.ID
	obj   *unstructured.Unstructured
	phase int
	// needsCRD is set when the object's kind is defined by a CRD of the
	// bundle that the cluster does not serve yet.
	needsCRD bool
	// resource is the object's API resource.
	resource schema.GroupVersionResource
	// hash identifies the applied configuration (see Entry.Hash).
	hash string
	// ignore are fields other controllers own (see IgnoreRule).
	ignore []FieldPath
	// runOnce marks a Job that removes itself when it finishes (see
	// Entry.RunOnce).
	runOnce bool
	// replace, create and takeOver are what one Apply decided about the
	// object, set on that call's copy of the items (see run), never on a
	// Plan's.
	//
	// replace is set by validation when the object must be deleted and
	// created again (an immutable field changes; see replaceable), or
	// for a hook left by an earlier revision (before-hook-creation).
	replace bool
	// hook is set for a Helm hook (see ApplyOptions.Hooks).
	hook *hookSpec
	// create is set by validation of a direct apply for an object not
	// read first: it is written with a create request (see createsFirst).
	create bool
	// takeOver is set by validation when the object still has fields
	// the engine set when it created the object (see takeOverCreated).
	takeOver bool
}

// Plan is a revision's objects, ready to apply: placed, labelled, checked
// and in apply order. A Plan is a value: nothing changes it once Prepare
// made it — not Apply, DryRun or validation, which work on their own
// copy of what they decide about each object; WithIgnored and Subset
// return new Plans. How one Apply goes (a dry-run first or not, the
// collision rules, which hooks run) is the call's ApplyOptions.
type Plan struct {
	owner Owner
	items []item
	// namespaces are the Namespaces the plan itself creates.
	namespaces map[string]bool
	// skipped are optional objects whose kind the cluster does not serve.
	skipped []inventory.ID
}

// Entry is one object of a plan as the caller records it.
type Entry struct {
	// ID names the object.
	ID inventory.ID
	// Hash identifies the configuration applied for the object: equal
	// hashes mean the same request body (owner labels included).
	Hash string
	// Resource is the object's API resource.
	Resource schema.GroupVersionResource
	// Labels and Annotations are the ones the plan sets on the object.
	Labels, Annotations map[string]string
	// RunOnce is set for a Job with spec.ttlSecondsAfterFinished: once it
	// finishes, the TTL controller deletes it, and it must not be created
	// again for the same revision. Such a Job carries the revision in an
	// annotation (Keys.Revision), so each revision runs it once.
	RunOnce bool
	// Hook is set for a Helm hook (see ApplyOptions.Hooks): it runs once per
	// revision, at its phase, and is never corrected for drift. It carries
	// the revision too.
	Hook bool
}

// Entries returns the plan's objects, in apply order.
func (p *Plan) Entries() []Entry {
	out := make([]Entry, len(p.items))
	for i, it := range p.items {
		out[i] = Entry{ID: it.id, Hash: it.hash, Resource: it.resource, Labels: it.obj.GetLabels(), Annotations: it.obj.GetAnnotations(), RunOnce: it.runOnce, Hook: it.hook != nil}
	}
	return out
}

// Skipped returns the optional objects (annotation Keys.Optional
// "true") left out because the cluster does not serve their kind.
func (p *Plan) Skipped() []inventory.ID { return p.skipped }

// IDs returns the IDs of the plan's objects, in apply order.
func (p *Plan) IDs() []inventory.ID {
	ids := make([]inventory.ID, len(p.items))
	for i := range p.items {
		ids[i] = p.items[i].id
	}
	return ids
}

// CRDs returns the plan's CustomResourceDefinitions (not copies: do not
// change them).
func (p *Plan) CRDs() []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, it := range p.items {
		if it.obj.GroupVersionKind().GroupKind() == crdGK {
			out = append(out, it.obj)
		}
	}
	return out
}

// Resource is one object of a plan and its API resource.
type Resource struct {
	ID       inventory.ID
	Resource schema.GroupVersionResource
}

// Resources returns the plan's objects with their API resources (for kinds
// a CRD of the bundle defines, as that CRD names them), in apply order.
func (p *Plan) Resources() []Resource {
	out := make([]Resource, len(p.items))
	for i, it := range p.items {
		out[i] = Resource{ID: it.id, Resource: it.resource}
	}
	return out
}

// Objects returns the plan's objects as they will be applied (placed and
// labelled), in apply order; not copies: do not change them.
func (p *Plan) Objects() []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(p.items))
	for i := range p.items {
		out[i] = p.items[i].obj
	}
	return out
}

// Len is the number of objects in the plan.
func (p *Plan) Len() int { return len(p.items) }

// Subset returns a plan of the objects named by ids only.
func (p *Plan) Subset(ids []inventory.ID) *Plan {
	want := make(map[inventory.ID]bool, len(ids))
	for _, id := range ids {
		want[id.Key()] = true
	}
	out := &Plan{owner: p.owner, namespaces: p.namespaces}
	for _, it := range p.items {
		if want[it.id.Key()] {
			out.items = append(out.items, it)
		}
	}
	return out
}

// BundleKind is what a CustomResourceDefinition of a bundle says about the
// kind it defines.
type BundleKind struct {
	// Namespaced is false for scope Cluster.
	Namespaced bool
	// Plural is the resource name (spec.names.plural).
	Plural string
	// Versions are the versions it serves.
	Versions map[string]bool
}

// Prepare checks objs and turns them into a Plan owned by owner. Namespaced
// objects without a namespace go to installNamespace. A duplicate object or
// a kind neither served nor defined by a CRD of the bundle is a terminal
// failure naming the object; objs are not modified.
func (e *Engine) Prepare(objs []*unstructured.Unstructured, installNamespace string, owner Owner) (*Plan, error) {
	crds, err := BundleKinds(objs)
	if err != nil {
		return nil, err
	}
	p := &Plan{owner: owner, namespaces: map[string]bool{}}
	seen := make(map[inventory.ID]bool, len(objs))
	// The RESTMapper is asked once per kind: an answer costs it a walk
	// of every group version it knows (about 12 KB of allocations).
	scopes := map[schema.GroupVersionKind]kindScope{}
	var first, rest []item
	for _, in := range objs {
		obj := in.DeepCopy()
		gvk := obj.GroupVersionKind()
		ks, ok := scopes[gvk]
		if !ok {
			ks.namespaced, ks.needsCRD, ks.resource, ks.err = e.scope(gvk, crds)
			scopes[gvk] = ks
		}
		namespaced, needsCRD, resource, err := ks.namespaced, ks.needsCRD, ks.resource, ks.err
		if err != nil && obj.GetAnnotations()[e.opts.Keys.Optional] == "true" && CodeOf(err) == CodeUnknownKind {
			// An optional object of a kind the cluster does not serve
			// (yet): left out, and reported.
			p.skipped = append(p.skipped, inventory.ID{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("object %s %q: %w", gvk.Kind, obj.GetName(), err)
		}
		switch {
		case !namespaced:
			obj.SetNamespace("")
		case obj.GetNamespace() == "":
			obj.SetNamespace(installNamespace)
		}
		id := inventory.ID{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
		if seen[id.Key()] {
			return nil, newError(CodeInvalidContent, "object %s appears twice in the bundle", id)
		}
		seen[id.Key()] = true
		e.stamp(obj, owner)
		runOnce, hook := isRunOnce(obj), hookOf(obj)
		if runOnce || hook != nil {
			ann := obj.GetAnnotations()
			if ann == nil {
				ann = map[string]string{}
			}
			ann[e.opts.Keys.Revision] = owner.Revision
			obj.SetAnnotations(ann)
		}
		hash, err := hashOf(obj)
		if err != nil {
			return nil, newError(CodeInvalidContent, "encoding object %s: %v", id, err)
		}
		it := item{id: id, obj: obj, phase: phaseRest, needsCRD: needsCRD, resource: resource, hash: hash, runOnce: runOnce, hook: hook}
		if gk := gvk.GroupKind(); gk == crdGK || gk == namespaceGK {
			// Written before anything else, hook or not.
			it.phase, it.hook = phaseFirst, nil
			if gk == namespaceGK {
				p.namespaces[obj.GetName()] = true
			}
			first = append(first, it)
			continue
		}
		rest = append(rest, it)
	}
	p.items = append(first, rest...)
	return p, nil
}

// kindScope is what scope answered for one kind.
type kindScope struct {
	namespaced, needsCRD bool
	resource             schema.GroupVersionResource
	err                  error
}

// scope tells whether gvk is namespaced and its resource, from the cluster
// or else from a CRD of the bundle (needsCRD), or fails with UnknownKind.
func (e *Engine) scope(gvk schema.GroupVersionKind, crds map[schema.GroupKind]BundleKind) (namespaced, needsCRD bool, resource schema.GroupVersionResource, err error) {
	m, err := e.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err == nil {
		return m.Scope.Name() == meta.RESTScopeNameNamespace, false, m.Resource, nil
	}
	if unavailable(err) {
		// Its group's discovery failed (its APIService is not
		// available): not served now; a CRD of the bundle cannot serve
		// a group an APIService serves.
		return false, false, resource, newError(CodeUnknownKind, "kind %s is not served by the cluster: %v", gvk.GroupVersion().WithKind(gvk.Kind), err)
	}
	if !meta.IsNoMatchError(err) {
		return false, false, resource, fmt.Errorf("looking up kind %s: %w", gvk, err)
	}
	if def, ok := crds[gvk.GroupKind()]; ok && def.Versions[gvk.Version] {
		return def.Namespaced, true, gvk.GroupVersion().WithResource(def.Plural), nil
	}
	return false, false, resource, newError(CodeUnknownKind,
		"kind %s is not served by the cluster and no CustomResourceDefinition of the bundle defines it", gvk.GroupVersion().WithKind(gvk.Kind))
}

// unavailable reports whether err, a RESTMapper's answer, says that the
// discovery of the kind's group version failed (the API server answered
// for it with an error, as for an APIService that is not available),
// rather than that the RESTMapper could not ask.
func unavailable(err error) bool {
	var failed *apiutil.ErrResourceDiscoveryFailed
	return errors.As(err, &failed) && !meta.IsNoMatchError(err)
}

// BundleKinds collects the kinds the CustomResourceDefinitions among objs
// define; a CRD without spec.group or spec.names.kind is a terminal
// failure (InvalidContent).
func BundleKinds(objs []*unstructured.Unstructured) (map[schema.GroupKind]BundleKind, error) {
	out := map[schema.GroupKind]BundleKind{}
	for _, obj := range objs {
		if obj.GroupVersionKind().GroupKind() != crdGK {
			continue
		}
		group, _, _ := unstructured.NestedString(obj.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "kind")
		scope, _, _ := unstructured.NestedString(obj.Object, "spec", "scope")
		plural, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "plural")
		versions, _, _ := unstructured.NestedSlice(obj.Object, "spec", "versions")
		if group == "" || kind == "" {
			return nil, newError(CodeInvalidContent, "CustomResourceDefinition %q has no spec.group or spec.names.kind", obj.GetName())
		}
		def := BundleKind{Namespaced: scope != "Cluster", Plural: plural, Versions: map[string]bool{}}
		for _, v := range versions {
			if m, ok := v.(map[string]any); ok {
				if name, ok := m["name"].(string); ok {
					def.Versions[name] = true
				}
			}
		}
		out[schema.GroupKind{Group: group, Kind: kind}] = def
	}
	return out, nil
}

// isRunOnce reports whether obj is a Job that deletes itself after it
// finishes (spec.ttlSecondsAfterFinished is set).
func isRunOnce(obj *unstructured.Unstructured) bool {
	if obj.GroupVersionKind().GroupKind() != (schema.GroupKind{Group: "batch", Kind: "Job"}) {
		return false
	}
	_, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "ttlSecondsAfterFinished")
	return found
}

// hashOf identifies obj's configuration: the first 128 bits of the SHA-256
// of its JSON encoding (map keys sorted, so equal objects hash equal).
func hashOf(obj *unstructured.Unstructured) (string, error) {
	body, err := json.Marshal(obj.Object)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:16]), nil
}

// stamp labels obj with its owner and drops fields that must not be part
// of an apply request. Nothing revision-specific is set, so an object a new
// revision leaves as it was is not written again.
func (e *Engine) stamp(obj *unstructured.Unstructured, owner Owner) {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[e.opts.Keys.OwnerKind] = e.opts.OwnerKind
	labels[e.opts.Keys.OwnerName] = owner.Name
	if owner.UID != "" {
		labels[e.opts.Keys.OwnerUID] = string(owner.UID)
	}
	obj.SetLabels(labels)
	for _, f := range []string{"resourceVersion", "uid", "creationTimestamp", "managedFields", "generation", "selfLink", "deletionTimestamp"} {
		unstructured.RemoveNestedField(obj.Object, "metadata", f)
	}
}
