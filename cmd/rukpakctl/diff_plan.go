package main

import (
	"fmt"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
)

// engineKeys are the labels and annotations the manager's apply engine
// writes and reads: those of bundledeployment.EngineKeys (a test checks
// they are equal), repeated here so that rukpakctl does not link the
// controller.
var engineKeys = apply.Keys{
	OwnerKind:          v1alpha2.LabelOwnerKind,
	OwnerName:          v1alpha2.LabelOwnerName,
	OwnerUID:           v1alpha2.LabelOwnerUID,
	Revision:           v1alpha2.AnnotationRevision,
	ReplaceOnImmutable: v1alpha2.AnnotationReplaceOnImmutable,
	Optional:           v1alpha2.AnnotationOptional,
}

// diffConcurrency is how many objects diff dry-runs at once.
const diffConcurrency = 8

// newDiffEngine returns an apply engine set up as the manager's (its field
// manager, owner kind and keys) that reads and dry-runs through cl as the
// user of the kubeconfig. It never writes: diff uses only Prepare,
// DryRun and Prunable.
func newDiffEngine(cl *cluster) *apply.Engine {
	return apply.New(cl.client, cl.client, nil, cl.client.RESTMapper(), apply.Options{
		FieldManager: v1alpha2.FieldManager,
		OwnerKind:    v1alpha2.BundleDeploymentKind,
		Keys:         engineKeys,
		Concurrency:  diffConcurrency,
	})
}

// driftIgnoreRules turns spec.driftIgnore into the apply engine's rules, as
// the controller does.
func driftIgnoreRules(in []v1alpha2.DriftIgnoreRule) ([]apply.IgnoreRule, error) {
	out := make([]apply.IgnoreRule, 0, len(in))
	for i, r := range in {
		rule := apply.IgnoreRule{Group: r.Group, Kind: r.Kind, Name: r.Name, Namespace: r.Namespace}
		for j, p := range r.Paths {
			path, err := apply.ParsePointer(p)
			if err != nil {
				return nil, fmt.Errorf("spec.driftIgnore[%d].paths[%d]: %w", i, j, err)
			}
			rule.Paths = append(rule.Paths, path)
		}
		out = append(out, rule)
	}
	return out, nil
}
