package bundledeployment

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/crdsafety"
	"github.com/rukpak/rukpak/internal/inventory"
	"github.com/rukpak/rukpak/pkg/failure"
)

// crdRollbackCase is what decideCRDRollback reads of one CRD that an
// earlier revision being applied again (a rollback) has, and that is
// installed.
type crdRollbackCase struct {
	// name is the CRD's name, gk the kind it defines.
	name string
	gk   schema.GroupKind
	// liveServed are the versions the installed (newer) CRD serves,
	// stored its status.storedVersions.
	liveServed, stored []string
	// earlierServed are the versions the earlier revision's CRD serves.
	earlierServed []string
	// unsafe is crdsafety's report of what the earlier definition would
	// drop or invalidate of the stored custom resources; "" when nothing
	// (or when the check is switched off: upgrade.crdUpgradeSafety None).
	unsafe string
}

// keptCRD is a CRD a rollback leaves at its newer, installed definition.
type keptCRD struct {
	name string
	// stored are the installed CRD's status.storedVersions.
	stored []string
	// why the earlier definition is not applied.
	why string
}

// String names the CRD and its stored versions, for events and status.
func (k keptCRD) String() string {
	return fmt.Sprintf("CRD %s (stored versions %s): %s", k.name, strings.Join(k.stored, ", "), k.why)
}

// crdRollback is what decideCRDRollback decided.
type crdRollback struct {
	// keep are the CRDs left out of the rollback's apply.
	keep []keptCRD
	// unsafe, when not empty, says why the rollback must not be applied
	// at all: the earlier revision's custom resources need a version a
	// kept CRD does not serve.
	unsafe []string
}

// decideCRDRollback decides, for a rollback, which installed CRDs keep
// their newer definition, and whether the rollback cannot be made safely.
// A CRD is kept when the earlier definition does not serve a version in
// the installed CRD's status.storedVersions (the API server refuses it,
// and what is stored could not be read), or would drop or invalidate
// stored data (crdsafety). The rollback is unsafe when an object of the
// earlier revision is a custom resource of a kept CRD at a version that
// CRD does not serve. It is pure: the reconcile gathers the cases
// (crdRollbackCases) and acts on the result.
func decideCRDRollback(cases []crdRollbackCase, objects []schema.GroupVersionKind) crdRollback {
	var out crdRollback
	kept := map[schema.GroupKind]crdRollbackCase{}
	for _, c := range cases {
		var why []string
		var missing []string
		for _, v := range c.stored {
			if !slices.Contains(c.earlierServed, v) {
				missing = append(missing, v)
			}
		}
		if len(missing) > 0 {
			why = append(why, fmt.Sprintf("the earlier definition does not serve stored version(s) %s", strings.Join(missing, ", ")))
		}
		if c.unsafe != "" {
			why = append(why, "the earlier definition would break stored objects: "+c.unsafe)
		}
		if len(why) == 0 {
			continue
		}
		out.keep = append(out.keep, keptCRD{name: c.name, stored: c.stored, why: strings.Join(why, "; ")})
		kept[c.gk] = c
	}
	for _, gvk := range objects {
		c, ok := kept[gvk.GroupKind()]
		if !ok || slices.Contains(c.liveServed, gvk.Version) {
			continue
		}
		msg := fmt.Sprintf("CRD %s must keep its newer definition (stored versions %s), which does not serve %s of the earlier revision's %s",
			c.name, strings.Join(c.stored, ", "), gvk.Version, gvk.Kind)
		if !slices.Contains(out.unsafe, msg) {
			out.unsafe = append(out.unsafe, msg)
		}
	}
	return out
}

// servedVersions are the versions crd serves.
func servedVersions(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for _, v := range crd.Spec.Versions {
		if v.Served {
			out = append(out, v.Name)
		}
	}
	return out
}

// crdRollbackCases reads, for each CRD of plan that is installed, what
// decideCRDRollback needs, and the plan's objects' kinds.
func (r *Reconciler) crdRollbackCases(ctx context.Context, s *scope, plan *apply.Plan) ([]crdRollbackCase, []schema.GroupVersionKind, error) {
	check := s.bd.Spec.Upgrade == nil || s.bd.Spec.Upgrade.CRDUpgradeSafety != v1alpha2.CRDUpgradeSafetyNone
	lister := customResourceLister{manager: r.Engine.Reader()}
	if !s.as.id.IsManager() {
		lister.install = s.as.engine.Reader()
	}
	var cases []crdRollbackCase
	for _, obj := range plan.CRDs() {
		earlier := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, earlier); err != nil {
			return nil, nil, failure.New(v1alpha2.ReasonInvalidContent, "CRD %s: %v", obj.GetName(), err)
		}
		live := &apiextensionsv1.CustomResourceDefinition{}
		err := s.as.engine.Reader().Get(ctx, client.ObjectKey{Name: earlier.Name}, live)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("getting installed CRD %s: %w", earlier.Name, err)
		}
		c := crdRollbackCase{
			name:          live.Name,
			gk:            schema.GroupKind{Group: live.Spec.Group, Kind: live.Spec.Names.Kind},
			liveServed:    servedVersions(live),
			stored:        live.Status.StoredVersions,
			earlierServed: servedVersions(earlier),
		}
		if check {
			res, err := crdsafety.Check(ctx, lister, live, earlier, crdsafety.DefaultOptions())
			if err != nil {
				return nil, nil, fmt.Errorf("checking rollback of CRD %s: %w", live.Name, err)
			}
			c.unsafe = res.Message()
		}
		cases = append(cases, c)
	}
	var objects []schema.GroupVersionKind
	for _, e := range plan.Entries() {
		objects = append(objects, e.ID.GroupVersionKind())
	}
	return cases, objects, nil
}

// crdID is the inventory ID of the CRD named name.
func crdID(name string) inventory.ID {
	return inventory.ID{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition", Name: name}
}

// keepCRDs decides which CRDs a rollback leaves at their installed
// definition (decideCRDRollback), and refuses the whole rollback, before
// anything is written, when that cannot be done safely.
func (r *Reconciler) keepCRDs(ctx context.Context, s *scope, plan *apply.Plan, ref revisionRef) ([]keptCRD, error) {
	if len(plan.CRDs()) == 0 {
		return nil, nil
	}
	cases, objects, err := r.crdRollbackCases(ctx, s, plan)
	if err != nil {
		return nil, err
	}
	d := decideCRDRollback(cases, objects)
	if len(d.unsafe) > 0 {
		return nil, failure.New(v1alpha2.ReasonRollbackUnsafe, "rollback to revision %s not applied, nothing of it was written: %s",
			ref.bundle, strings.Join(d.unsafe, "; "))
	}
	return d.keep, nil
}

// keptNote is what the status says of the CRDs kept, "" when none.
func keptNote(kept []string) string {
	if len(kept) == 0 {
		return ""
	}
	return "; kept the newer definition of " + strings.Join(kept, " | ")
}

// isEarlierRevision reports whether the spec names an earlier revision
// than the active one (rukpakctl rollback rewrites the spec to an earlier
// Bundle's sources): its Bundle existed before this reconcile and its
// revision number is lower than the active Bundle's. Its CRDs are then
// judged as a rollback's.
func (r *Reconciler) isEarlierRevision(ctx context.Context, s *scope) (bool, error) {
	active := s.facts.active
	if s.created || s.bundle == nil || active == "" || active == s.bundle.Name {
		return false, nil
	}
	b := &v1alpha2.Bundle{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: active}, b); apierrors.IsNotFound(err) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("getting active Bundle %s: %w", active, err)
	}
	this, err1 := strconv.Atoi(s.bundle.Labels[v1alpha2.LabelRevision])
	newer, err2 := strconv.Atoi(b.Labels[v1alpha2.LabelRevision])
	return err1 == nil && err2 == nil && this < newer, nil
}
