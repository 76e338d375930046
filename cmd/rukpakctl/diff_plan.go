package main

import (
	"context"
	"fmt"
	"io"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/servingcert"
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

// fillCerts completes objs with the serving certificates they ask for
// (registry+v1 webhooks and API services), as the manager does: the live
// certificate Secrets of namespace, read with r, are kept while good, and
// new certificates are issued where they are missing or due (a change the
// diff shows). A user who may not read those Secrets is told that the
// certificates shown are new ones.
func fillCerts(ctx context.Context, stderr io.Writer, r client.Reader, namespace string, objs []*unstructured.Unstructured) error {
	names := servingcert.Requested(objs, namespace)
	if len(names) == 0 {
		return nil
	}
	live, err := servingcert.Load(ctx, r, namespace, names)
	if apierrors.IsForbidden(err) {
		fmt.Fprintf(stderr, "note: the serving certificate Secrets of namespace %s cannot be read (%v): new certificates are shown\n", namespace, err)
		live, err = servingcert.Live{}, nil
	}
	if err != nil {
		return err
	}
	if _, err := servingcert.Fill(objs, namespace, live, time.Now(), servingcert.DefaultOptions()); err != nil {
		return fmt.Errorf("serving certificates: %w", err)
	}
	return nil
}
