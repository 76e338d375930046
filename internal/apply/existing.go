package apply

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/pager"
)

const (
	// listExistingAtLeast is how many objects of one kind in one
	// namespace a first install finds out about with a list of that
	// namespace's objects of the kind rather than one read each: a big
	// bundle's 4,000 ConfigMaps are 8 lists, not 4,000 reads. Below it a
	// read each is cheaper than listing what else the namespace holds.
	listExistingAtLeast = 64
	// listExistingPage is the most objects one list request returns.
	listExistingPage = 500
)

// kindIn is one kind in one namespace ("" for a cluster-scoped kind).
type kindIn struct {
	gvk       schema.GroupVersionKind
	namespace string
}

// listedObjects is what lists found of a plan's objects: for each listed
// kind and namespace, the metadata of those of them that exist.
type listedObjects map[kindIn]map[string]*metav1.PartialObjectMetadata

// listExisting lists, as the engine's identity, the metadata of every
// kind with at least listExistingAtLeast objects at idx in one namespace,
// a page at a time, keeping only the plan's objects. Like a read, a list
// sees every object, whoever wrote it; the lists are as current as reads
// (the API server serves them at its latest revision).
func (e *Engine) listExisting(ctx context.Context, p *run, idx []int) (listedObjects, error) {
	names := map[kindIn]map[string]bool{}
	resources := map[kindIn]schema.GroupVersionResource{}
	for _, i := range idx {
		id := p.items[i].id
		k := kindIn{gvk: id.GroupVersionKind(), namespace: id.Namespace}
		if names[k] == nil {
			names[k] = map[string]bool{}
			resources[k] = p.items[i].resource
		}
		names[k][id.Name] = true
	}
	out := listedObjects{}
	for k, want := range names {
		if len(want) < listExistingAtLeast {
			continue
		}
		found, err := e.listMetadata(ctx, k, resources[k], want)
		if err != nil {
			return nil, err
		}
		out[k] = found
	}
	return out, nil
}

// listMetadata lists the metadata of k's objects (of resource) and keeps those named in
// want. An expired continuation fails the list rather than falling back to
// one unpaged list of the whole kind.
func (e *Engine) listMetadata(ctx context.Context, k kindIn, resource schema.GroupVersionResource, want map[string]bool) (map[string]*metav1.PartialObjectMetadata, error) {
	var ri metadata.ResourceInterface = e.meta.Resource(resource)
	if k.namespace != "" {
		ri = e.meta.Resource(resource).Namespace(k.namespace)
	}
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return ri.List(ctx, opts)
	})
	p.PageSize, p.PageBufferSize, p.FullListIfExpired = listExistingPage, 0, false
	found := map[string]*metav1.PartialObjectMetadata{}
	err := p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		if m, ok := obj.(*metav1.PartialObjectMetadata); ok && want[m.Name] {
			kept := *m
			kept.SetGroupVersionKind(k.gvk)
			found[kept.Name] = &kept
		}
		return nil
	})
	if err != nil {
		where := "cluster-wide"
		if k.namespace != "" {
			where = "in namespace " + k.namespace
		}
		if f := e.classifyAnswer(err, 0); f != nil && f.Code == CodeUnknownKind {
			return nil, newError(CodeUnknownKind, "listing %s %s to find which exist: %s", k.gvk.Kind, where, f.Message)
		}
		return nil, fmt.Errorf("listing %s %s to find which exist: %w", k.gvk.Kind, where, err)
	}
	return found, nil
}

// existing returns the object's metadata as a list found it, or, for a
// kind not listed, as the engine reads it (an empty object when it does
// not exist).
func (l listedObjects) existing(ctx context.Context, e *Engine, it item) (*metav1.PartialObjectMetadata, error) {
	found, listed := l[kindIn{gvk: it.id.GroupVersionKind(), namespace: it.id.Namespace}]
	if !listed {
		return e.existing(ctx, it)
	}
	if obj, ok := found[it.id.Name]; ok {
		return obj, nil
	}
	return &metav1.PartialObjectMetadata{}, nil
}

// exists reports whether a list found it's object; false also when its
// kind was not listed.
func (l listedObjects) exists(it item) bool {
	_, ok := l[kindIn{gvk: it.id.GroupVersionKind(), namespace: it.id.Namespace}][it.id.Name]
	return ok
}

// existing reads the metadata of it's object as it is; an object that does
// not exist comes back empty (no resourceVersion).
func (e *Engine) existing(ctx context.Context, it item) (*metav1.PartialObjectMetadata, error) {
	ri, _, err := e.resourceOf(it)
	if err != nil {
		return nil, err
	}
	obj, err := ri.Get(ctx, it.id.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return &metav1.PartialObjectMetadata{}, nil
	}
	if err != nil {
		return nil, err
	}
	obj.SetGroupVersionKind(it.id.GroupVersionKind())
	return obj, nil
}
