package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/inventory"
	"github.com/rukpak/rukpak/internal/objdiff"
	"github.com/rukpak/rukpak/internal/planner"
)

func init() { register(newDiffCmd) }

// Exit statuses of rukpakctl diff, as kubectl diff's (0: no differences).
const (
	diffFound  = 1 // differences found
	diffFailed = 2 // diff failed
)

// diffOptions are the flags of `rukpakctl diff`.
type diffOptions struct {
	inputFlags
}

func newDiffCmd() *cobra.Command {
	o := &diffOptions{}
	cmd := &cobra.Command{
		Use:   "diff NAME|FILE",
		Short: "Show what applying a BundleDeployment's spec would change on the cluster, as kubectl diff does",
		Long: `Render a BundleDeployment's content as rukpak would and show, as unified
diffs like kubectl diff's, what applying it would change on the cluster:
each object is applied server-side as a dry-run (nothing is written) with
rukpak's field manager, conflicts forced, as the manager applies it, and
the live object is compared with the API server's answer. Objects the
BundleDeployment has installed and the bundle no longer has show as
removed (all lines -); new objects as added (all lines +).

FILE is a YAML file holding a BundleDeployment not applied yet (its
content is --content, its only image source, or its sources fetched here).
NAME is a BundleDeployment on the cluster: its spec as it stands (its
newest Bundle, say a revision held after a failure) is compared with what
is live.

Both sides drop managedFields, resourceVersion, generation, uid,
creationTimestamp, selfLink and status; the values of a Secret's data and
stringData are shown as *** (or *** (before) and *** (after) where they
change), never in clear. Objects are sorted by their name in the header,
live/<group.>version.Kind.namespace.name. Objects that cannot be dry-run
before the apply creates what they need (a kind a CRD of the bundle
defines, a namespace not there yet, a binding of a role of the bundle, an
object replaced because a field that cannot change does) are shown as
they would be sent, and a note on stderr says which.

Helm hooks are shown when the manager would run them: install hooks for a
first install, upgrade hooks for a new revision, none for the active
revision applied again.

The content is rendered as by rukpakctl render, but for Helm's lookup,
which is answered from the cluster as you (the manager answers it as the
install identity), so that a Secret a chart keeps with lookup shows its
live value; where you may not read what the chart looks up, lookup finds
nothing, as offline, and a note on stderr says so.

Exit status, as kubectl diff's: 0 no differences, 1 differences found,
2 (or more) diff failed.`,
		Example: `  rukpakctl diff bd.yaml --content ./my-bundle-v2
  rukpakctl diff bd.yaml                # its only image source
  rukpakctl diff my-operator            # a BundleDeployment on the cluster, e.g. a held revision`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := cobra.ExactArgs(1)(cmd, args); err != nil {
				return &exitError{code: diffFailed, err: err}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			changed, err := o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0])
			switch {
			case err != nil:
				return &exitError{code: diffFailed, err: err}
			case changed > 0:
				return &exitError{code: diffFound}
			}
			return nil
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &exitError{code: diffFailed, err: err} })
	o.add(cmd.Flags())
	return cmd
}

// add registers the flags on fs.
func (o *diffOptions) add(fs *pflag.FlagSet) { o.inputFlags.add(fs) }

// run diffs BundleDeployment arg (a name or a file) against the cluster
// and returns how many objects differ.
func (o *diffOptions) run(ctx context.Context, stdout, stderr io.Writer, arg string) (int, error) {
	cl, err := o.connect(stderr, true)
	if err != nil {
		return 0, err
	}
	objs, err := o.objects(ctx, stderr, cl, arg)
	if err != nil {
		return 0, err
	}
	return objdiff.Write(stdout, objs)
}

// objects returns each object applying BundleDeployment arg (a name or a
// file) on cl would write or delete, as it is and as it would be; notes go
// to stderr.
func (o *diffOptions) objects(ctx context.Context, stderr io.Writer, cl *cluster, arg string) ([]objdiff.Object, error) {
	in, err := read(ctx, cl, arg)
	if err != nil {
		return nil, err
	}
	return o.objectsOf(ctx, stderr, cl, in)
}

// objectsOf returns each object applying in on cl would write or delete,
// as it is and as it would be; notes go to stderr.
func (o *diffOptions) objectsOf(ctx context.Context, stderr io.Writer, cl *cluster, in input) ([]objdiff.Object, error) {
	own, err := ownerOf(ctx, stderr, cl, in)
	if err != nil {
		return nil, err
	}
	engine := newDiffEngine(cl)
	plan, err := o.plan(ctx, stderr, cl, engine, in, own)
	if err != nil {
		return nil, err
	}
	diffs, err := appliedObjects(ctx, stderr, engine, own, plan)
	if err != nil {
		return nil, err
	}
	removed, err := removedObjects(ctx, stderr, cl, engine, own, plan.IDs())
	if err != nil {
		return nil, err
	}
	return append(diffs, removed...), nil
}

// plan renders in.bd's content and makes it a plan through the manager's
// pipeline (package planner) as revision own.revision: serving
// certificates filled, objects placed and labelled, fields others own kept
// as they are live.
func (o *diffOptions) plan(ctx context.Context, stderr io.Writer, cl *cluster, engine *apply.Engine, in input, own owner) (*apply.Plan, error) {
	objs, err := o.render(ctx, stderr, cl, in, own.release)
	if err != nil {
		return nil, err
	}
	plan, err := planner.Plan(ctx, engine, planner.Revision{
		Objects: objs, Owner: apply.Owner{Name: own.name, Revision: own.revision, UID: own.uid},
		InstallNamespace: in.bd.Spec.InstallNamespace, DriftIgnore: in.bd.Spec.DriftIgnore,
		Certs: diffCerts(stderr, cl.client, in.bd.Spec.InstallNamespace),
	})
	if err != nil {
		return nil, err
	}
	for _, id := range plan.Skipped() {
		fmt.Fprintf(stderr, "note: %s is optional and its kind is not served: left out, as the manager leaves it out\n", id)
	}
	return plan, nil
}

// appliedObjects dry-runs plan, running the hooks of own.hooks, and
// returns each object the manager would write, as it is and as it would
// be.
func appliedObjects(ctx context.Context, stderr io.Writer, engine *apply.Engine, own owner, plan *apply.Plan) ([]objdiff.Object, error) {
	previews, err := engine.DryRun(ctx, plan, apply.ApplyOptions{Hooks: own.hooks})
	if err != nil {
		return nil, err
	}
	diffs := make([]objdiff.Object, 0, len(previews))
	var hooks []string
	for _, pv := range previews {
		if pv.RunOnce && pv.Live == nil && own.sameRevision {
			// It ran for this revision and removed itself; the
			// manager does not create it again.
			continue
		}
		if pv.Hook {
			hooks = append(hooks, pv.ID.String())
		}
		noteUnusual(stderr, engine, own, pv)
		diffs = append(diffs, objdiff.Object{Name: nameOf(pv.ID), Live: pv.Live, Merged: pv.Merged})
	}
	if len(hooks) > 0 {
		fmt.Fprintf(stderr, "note: Helm hook(s) %s run during the apply, and their delete policy may remove them afterwards\n", strings.Join(hooks, ", "))
	}
	return diffs, nil
}

// noteUnusual notes on stderr what the diff of pv does not show: that it
// was not dry-run, or that it exists and is not the BundleDeployment's.
func noteUnusual(stderr io.Writer, engine *apply.Engine, own owner, pv apply.Preview) {
	if pv.NotDryRun != "" {
		fmt.Fprintf(stderr, "note: %s is shown as it would be sent, not dry-run: %s\n", pv.ID, pv.NotDryRun)
	}
	if pv.Live != nil && !engine.Owns(pv.Live, own.name, own.uid) {
		policy := own.collisionProtection
		if policy == "" {
			policy = v1alpha2.CollisionProtectionPrevent
		}
		fmt.Fprintf(stderr, "note: %s exists and is not BundleDeployment %s's: collisionProtection %s decides whether the manager may take it over\n", pv.ID, own.name, policy)
	}
}

// removedObjects returns, as removed, the objects own has installed that
// the plan (of ids) no longer has and that the manager would delete;
// those it would leave in place are noted on stderr.
func removedObjects(ctx context.Context, stderr io.Writer, cl *cluster, engine *apply.Engine, own owner, ids []inventory.ID) ([]objdiff.Object, error) {
	inst, err := installedObjects(ctx, stderr, cl, own)
	if err != nil {
		return nil, err
	}
	stale := inventory.Stale(inst.ids, ids)
	if len(stale) == 0 {
		return nil, nil
	}
	gone, kept, err := engine.Prunable(ctx, own.name, stale, apply.PruneOptions{
		DeleteCRDs: own.deleteCRDs,
		Keep:       func(id inventory.ID) bool { return inst.keep[id.Key()] },
		OwnerUID:   own.uid,
	})
	if err != nil {
		return nil, err
	}
	for _, id := range kept {
		why := "annotated " + v1alpha2.AnnotationResourcePolicy + ": " + v1alpha2.ResourcePolicyKeep
		if id.Group == "apiextensions.k8s.io" && id.Kind == "CustomResourceDefinition" {
			why = "CRDs are kept unless spec.deletionPolicy.crds is Delete"
		}
		fmt.Fprintf(stderr, "note: %s is no longer in the bundle and is left in place (%s)\n", id, why)
	}
	out := make([]objdiff.Object, 0, len(gone))
	for _, obj := range gone {
		out = append(out, objdiff.Object{Name: nameOfObject(obj), Live: obj})
	}
	return out, nil
}

// nameOf names the object id in a diff header.
func nameOf(id inventory.ID) string {
	return objdiff.Name(id.GroupVersionKind(), id.Namespace, id.Name)
}

// nameOfObject names obj in a diff header.
func nameOfObject(obj *unstructured.Unstructured) string {
	return objdiff.Name(obj.GroupVersionKind(), obj.GetNamespace(), obj.GetName())
}
