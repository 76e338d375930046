package plain

import (
	"context"
	"io/fs"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/format/kustomize"
	"github.com/rukpak/rukpak/pkg/failure"
	"github.com/rukpak/rukpak/pkg/format"
)

// kustomizeObjects builds the kustomization at the root of fsys, whose
// file is kustomization, within f's limits and checks the objects it
// builds as it checks manifests: apiVersion, kind and name, no duplicates,
// at most MaxObjects.
func (f *Format) kustomizeObjects(ctx context.Context, fsys fs.FS, kustomization string,
	cfg format.Config) ([]*unstructured.Unstructured, error) {
	limits := f.Limits.withDefaults()
	built, err := kustomize.Build(ctx, fsys, kustomize.Limits{
		MaxFileBytes:  limits.MaxFileBytes,
		MaxTotalBytes: limits.MaxTotalBytes,
		MaxFiles:      limits.MaxFiles,
	})
	if err != nil {
		return nil, err
	}
	c := newCollector(limits, cfg.InstallNamespace)
	for i, obj := range built {
		loc := location{path: kustomization, doc: i + 1, item: -1}
		if err := c.addObject(loc, obj.Object); err != nil {
			return nil, err
		}
	}
	if len(c.objects) == 0 {
		return nil, failure.New(v1alpha2.ReasonInvalidContent, "%s builds no objects", kustomization)
	}
	return c.objects, nil
}
