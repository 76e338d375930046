package apply

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

// listedObjects is what lists found of the objects of a plan: for each
// listed kind and namespace, the metadata of those that exist.
type listedObjects struct {
	listed map[kindIn]bool
	found  map[kindIn]map[string]*metav1.PartialObjectMetadata
}

// listExisting lists, as the engine's identity, the metadata of every
// kind with at least listExistingAtLeast objects at idx in one namespace,
// a page at a time, keeping only the plan's objects. Like a read, a list
// sees every object, whoever wrote it; the lists are as current as reads
// (the API server serves them at its latest revision).
func (e *Engine) listExisting(ctx context.Context, p *Plan, idx []int) (*listedObjects, error) {
	count := map[kindIn]int{}
	for _, i := range idx {
		it := p.items[i]
		count[kindIn{gvk: it.id.GroupVersionKind(), namespace: it.id.Namespace}]++
	}
	out := &listedObjects{listed: map[kindIn]bool{}, found: map[kindIn]map[string]*metav1.PartialObjectMetadata{}}
	for k, n := range count {
		if n < listExistingAtLeast {
			continue
		}
		want := map[string]bool{}
		for _, i := range idx {
			if it := p.items[i]; it.id.Namespace == k.namespace && it.id.GroupVersionKind() == k.gvk {
				want[it.id.Name] = true
			}
		}
		found, err := e.listMetadata(ctx, k, want)
		if err != nil {
			return nil, err
		}
		out.listed[k] = true
		out.found[k] = found
	}
	return out, nil
}

// listMetadata lists the metadata of k's objects and keeps those named in
// want.
func (e *Engine) listMetadata(ctx context.Context, k kindIn, want map[string]bool) (map[string]*metav1.PartialObjectMetadata, error) {
	found := map[string]*metav1.PartialObjectMetadata{}
	opts := []client.ListOption{client.Limit(listExistingPage)}
	where := "cluster-wide"
	if k.namespace != "" {
		opts = append(opts, client.InNamespace(k.namespace))
		where = "in namespace " + k.namespace
	}
	cont := ""
	for {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(k.gvk.GroupVersion().WithKind(k.gvk.Kind + "List"))
		if err := e.live().List(ctx, list, append(opts, client.Continue(cont))...); err != nil {
			return nil, fmt.Errorf("listing %s %s to find which exist: %w", k.gvk.Kind, where, err)
		}
		for i := range list.Items {
			if want[list.Items[i].Name] {
				obj := list.Items[i]
				obj.SetGroupVersionKind(k.gvk)
				found[obj.Name] = &obj
			}
		}
		if cont = list.Continue; cont == "" {
			return found, nil
		}
	}
}

// existing returns the object's metadata as a list found it, or, for a kind not
// listed, as the engine reads it (an empty object when it does not exist).
func (l *listedObjects) existing(ctx context.Context, e *Engine, it item) (*metav1.PartialObjectMetadata, error) {
	k := kindIn{gvk: it.id.GroupVersionKind(), namespace: it.id.Namespace}
	if l == nil || !l.listed[k] {
		return e.existing(ctx, it)
	}
	if obj, ok := l.found[k][it.id.Name]; ok {
		return obj, nil
	}
	return &metav1.PartialObjectMetadata{}, nil
}
