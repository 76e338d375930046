package upload

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// listPage is how many objects one List request returns.
const listPage = 250

// GC deletes the uploads nothing uses and returns how many ConfigMaps it
// deleted. inUse holds the digests ("sha256:<hex>") that Bundles (and
// BundleDeployments about to make Bundles) reference.
//
// Only what a Store wrote is ever deleted: a ConfigMap whose name has the
// pattern of a chunk (manifest), whose LabelChunk (LabelManifest) label
// FieldManager set, as its managedFields record. A ConfigMap someone else
// labelled, or named like a chunk without the label, is left alone.
//
// A manifest is deleted when its digest is not in inUse and it was neither
// written nor reused within the grace period (the CLI creates the
// BundleDeployment after the upload). Then a chunk is deleted when no
// remaining manifest lists it and it was neither written nor reused within
// the grace period (an upload in progress). Every delete is conditional on
// the resourceVersion GC saw, so an object a Put reuses meanwhile is kept;
// several GCs may run at once.
func (s *Store) GC(ctx context.Context, inUse map[string]bool) (int, error) {
	referenced, deleted, err := s.gcManifests(ctx, inUse)
	if err != nil {
		return deleted, err
	}
	n, err := s.gcChunks(ctx, referenced)
	return deleted + n, err
}

// gcManifests deletes unused manifests and returns the chunks the others
// list. It stops at the first error: with manifests unknown, no chunk may
// be deleted.
func (s *Store) gcManifests(ctx context.Context, inUse map[string]bool) (map[string]bool, int, error) {
	referenced := map[string]bool{}
	deleted := 0
	list := &corev1.ConfigMapList{}
	opts := []client.ListOption{client.InNamespace(s.namespace), client.HasLabels{LabelManifest}, client.Limit(listPage)}
	for {
		if err := s.reader.List(ctx, list, opts...); err != nil {
			return nil, deleted, fmt.Errorf("listing upload manifests in %s: %w", s.namespace, err)
		}
		for i := range list.Items {
			cm := &list.Items[i]
			m, _ := parseManifest(cm) // a malformed manifest references nothing
			digest := digestPrefix + strings.TrimPrefix(cm.Name, ManifestName(""))
			// A manifest rukpak did not write is never deleted; the chunks
			// it lists are kept too.
			keep := inUse[digest] || s.fresh(cm) || !writtenManifest(cm)
			if !keep {
				gone, err := s.deleteIfUnchanged(ctx, cm)
				if err != nil {
					return nil, deleted, err
				}
				keep = !gone
				if gone {
					deleted++
				}
			}
			if keep && m != nil {
				for _, c := range m.chunks {
					referenced[c.hex] = true
				}
			}
		}
		if list.Continue == "" {
			return referenced, deleted, nil
		}
		opts = append(opts[:3], client.Continue(list.Continue))
	}
}

// gcChunks deletes the chunks that are not referenced and not fresh. It
// reads only their metadata.
func (s *Store) gcChunks(ctx context.Context, referenced map[string]bool) (int, error) {
	deleted := 0
	var errs []error
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	opts := []client.ListOption{client.InNamespace(s.namespace), client.MatchingLabels{LabelChunk: "true"}, client.Limit(listPage)}
	for {
		if err := s.reader.List(ctx, list, opts...); err != nil {
			return deleted, errors.Join(append(errs, fmt.Errorf("listing upload chunks in %s: %w", s.namespace, err))...)
		}
		for i := range list.Items {
			obj := &list.Items[i]
			if referenced[strings.TrimPrefix(obj.Name, ChunkName(""))] || s.fresh(obj) || !writtenChunk(obj) {
				continue
			}
			obj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
			gone, err := s.deleteIfUnchanged(ctx, obj)
			if err != nil {
				errs = append(errs, err)
			}
			if gone {
				deleted++
			}
		}
		if list.Continue == "" {
			return deleted, errors.Join(errs...)
		}
		opts = append(opts[:3], client.Continue(list.Continue))
	}
}

// deleteIfUnchanged deletes obj unless it changed (was reused) since it was
// read. It reports whether this call deleted it.
func (s *Store) deleteIfUnchanged(ctx context.Context, obj client.Object) (bool, error) {
	uid, rv := obj.GetUID(), obj.GetResourceVersion()
	err := s.client.Delete(ctx, obj, client.Preconditions{UID: &uid, ResourceVersion: &rv})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return false, nil
	}
	return false, fmt.Errorf("deleting ConfigMap %s/%s: %w", s.namespace, obj.GetName(), err)
}
