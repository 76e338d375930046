package apply

import (
	"context"
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// patch server-side applies one object (or dry-runs it) and returns the
// object's metadata after the apply.
func (e *Engine) patch(ctx context.Context, it item, dryRun bool) (*metav1.PartialObjectMetadata, error) {
	ri, _, err := e.resourceOf(it)
	if err != nil {
		return nil, err
	}
	obj, err := e.withLiveIgnored(ctx, it)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, newError(CodeInvalidContent, "encoding object %s: %v", it.id, err)
	}
	opts := metav1.PatchOptions{FieldManager: e.opts.FieldManager, Force: ptr.To(true)}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return ri.Patch(ctx, it.id.Name, types.ApplyPatchType, body, opts)
}
