package crdsafety

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rukpak/rukpak/internal/limits"
)

// Defaults of Options: how much of a CRD's existing objects Check reads.
const (
	// DefaultMaxObjects is how many existing objects Check reads at each
	// version whose schema changes.
	DefaultMaxObjects = 1000
	// DefaultPageSize is how many objects one list request asks for.
	DefaultPageSize = 250
	// DefaultMaxFailingObjects is how many failing objects end the check.
	DefaultMaxFailingObjects = 100
	// DefaultMaxObjectsPerFinding is how many objects a finding names.
	DefaultMaxObjectsPerFinding = 3
)

// Options bound Check's work and say which findings the user accepts.
type Options struct {
	// Accepted are the IDs (Finding.ID) of the findings accepted for this
	// CRD: they do not make the change unsafe.
	Accepted []string
	// MaxObjects is how many existing objects are read at each version
	// whose schema changes; more are left unchecked.
	MaxObjects int
	// PageSize is how many objects one list request asks for.
	PageSize int64
	// MaxFailingObjects ends the check once this many objects fail.
	MaxFailingObjects int
	// MaxObjectsPerFinding is how many objects a finding names.
	MaxObjectsPerFinding int
}

// DefaultOptions are the bounds the controller and the webhook use.
func DefaultOptions() Options {
	return Options{
		MaxObjects:           DefaultMaxObjects,
		PageSize:             DefaultPageSize,
		MaxFailingObjects:    DefaultMaxFailingObjects,
		MaxObjectsPerFinding: DefaultMaxObjectsPerFinding,
	}
}

// withDefaults fills bounds left at zero or below from DefaultOptions.
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	o.MaxObjects = limits.PositiveOr(o.MaxObjects, d.MaxObjects)
	o.PageSize = limits.PositiveOr(o.PageSize, d.PageSize)
	o.MaxFailingObjects = limits.PositiveOr(o.MaxFailingObjects, d.MaxFailingObjects)
	o.MaxObjectsPerFinding = limits.PositiveOr(o.MaxObjectsPerFinding, d.MaxObjectsPerFinding)
	return o
}

// errFull ends a listing once enough objects failed.
var errFull = errors.New("enough failing objects")

// Check judges replacing the installed CRD oldCRD by newCRD by what exists
// (see the package documentation): it reads the existing objects through
// l at every version whose schema changes, at most opts.MaxObjects each,
// and turns what would break into findings. Findings whose ID is in
// opts.Accepted are moved to Result.Accepted. An error means the check
// could not be made (a list failed, a schema cannot be built), not that
// the change is unsafe.
func Check(ctx context.Context, l Lister, oldCRD, newCRD *apiextensionsv1.CustomResourceDefinition, opts Options) (*Result, error) {
	if oldCRD == nil || newCRD == nil {
		return nil, errors.New("check CRD upgrade: no CRD given")
	}
	opts = opts.withDefaults()
	changes := Compare(oldCRD, newCRD)
	always, ifObjects := crdWideFindings(oldCRD, newCRD, changes)
	j := newJudge(changes, opts)
	res := &Result{CRD: newCRD.Name}
	versions := changedVersions(oldCRD, newCRD)
	more := false
	for _, name := range versions {
		if j.full() {
			res.Partial = append(res.Partial, fmt.Sprintf("version %s was not checked: %d objects failed already", name, j.failing))
			more = true
			continue
		}
		vc, err := newVersionCheck(findVersion(oldCRD, name), findVersion(newCRD, name))
		if err != nil {
			return nil, fmt.Errorf("checking CRD %s: %w", newCRD.Name, err)
		}
		n, truncated, err := listVersion(ctx, l, oldCRD, name, opts.PageSize, opts.MaxObjects, func(obj *unstructured.Unstructured) error {
			problems, err := vc.check(obj.Object)
			if err != nil {
				return fmt.Errorf("checking %s: %w", objectKey(obj), err)
			}
			j.record(name, obj, problems)
			if j.full() {
				return errFull
			}
			return nil
		})
		res.Checked += n
		j.seen = max(j.seen, n)
		switch {
		case errors.Is(err, errFull):
			res.Partial = append(res.Partial, fmt.Sprintf("checking version %s stopped after %d failing objects", name, j.failing))
			more = true
		case err != nil:
			return nil, fmt.Errorf("checking CRD %s: %w", newCRD.Name, err)
		case truncated:
			res.Partial = append(res.Partial, fmt.Sprintf("only the first %d objects at version %s were checked", n, name))
			more = true
		}
	}
	findings := always
	if len(ifObjects) > 0 {
		sample, count, unknown, err := existingObjects(ctx, l, oldCRD, j, len(versions) > 0, opts)
		if err != nil {
			return nil, fmt.Errorf("checking CRD %s: %w", newCRD.Name, err)
		}
		for _, f := range ifObjects {
			if count > 0 {
				f.Objects, f.Count, f.More = sample, count, unknown || more
				findings = append(findings, f)
			}
		}
	}
	findings = append(findings, j.findings(versions, more)...)
	for _, f := range findings {
		if slices.Contains(opts.Accepted, f.ID()) {
			res.Accepted = append(res.Accepted, f)
		} else {
			res.Findings = append(res.Findings, f)
		}
	}
	return res, nil
}

// crdWideFindings are the findings about the CRD as a whole: always those
// that hold whatever exists (a stored version removed), ifObjects those
// that hold only when objects exist (scope or kind changed, a served
// version dropped).
func crdWideFindings(oldCRD, newCRD *apiextensionsv1.CustomResourceDefinition, changes []Change) (always, ifObjects []Finding) {
	removedStored := map[string]bool{}
	for _, c := range changes {
		switch c.Rule {
		case RuleStoredVersionRemoved:
			removedStored[c.Version] = true
			always = append(always, Finding{Kind: KindStoredVersionRemoved, Version: c.Version, Message: c.Message})
		case RuleScopeChanged:
			ifObjects = append(ifObjects, Finding{Kind: KindScopeChanged, Message: c.Message})
		case RuleKindChanged:
			ifObjects = append(ifObjects, Finding{Kind: KindKindChanged, Message: c.Message})
		}
	}
	for _, v := range oldCRD.Spec.Versions {
		if !v.Served || removedStored[v.Name] {
			continue
		}
		switch nv := findVersion(newCRD, v.Name); {
		case nv == nil:
			ifObjects = append(ifObjects, Finding{Kind: KindServedVersionDropped, Version: v.Name, Message: "served version removed from spec.versions"})
		case !nv.Served:
			ifObjects = append(ifObjects, Finding{Kind: KindServedVersionDropped, Version: v.Name, Message: "version no longer served"})
		}
	}
	return always, ifObjects
}

// changedVersions are the versions, in oldCRD's order, served by both CRDs
// whose schemas differ: the ones whose existing objects are checked.
func changedVersions(oldCRD, newCRD *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for i := range oldCRD.Spec.Versions {
		ov := &oldCRD.Spec.Versions[i]
		nv := findVersion(newCRD, ov.Name)
		if ov.Served && nv != nil && nv.Served && !equality.Semantic.DeepEqual(ov.Schema, nv.Schema) {
			out = append(out, ov.Name)
		}
	}
	return out
}

// existingObjects names the first objects of oldCRD and counts them (a
// lower bound when unknown is set): from what the judge read when it
// listed any version, else from a short listing of a served version.
func existingObjects(ctx context.Context, l Lister, oldCRD *apiextensionsv1.CustomResourceDefinition, j *judge, listed bool, opts Options) (sample []ObjectFailure, count int, unknown bool, err error) {
	if listed {
		return j.sample, j.seen, false, nil
	}
	version := servedVersion(oldCRD)
	if version == "" {
		return nil, 0, false, nil
	}
	n, more, err := listVersion(ctx, l, oldCRD, version, int64(opts.MaxObjectsPerFinding), opts.MaxObjectsPerFinding, func(obj *unstructured.Unstructured) error {
		sample = append(sample, ObjectFailure{Namespace: obj.GetNamespace(), Name: obj.GetName()})
		return nil
	})
	return sample, n, more, err
}

// servedVersion is oldCRD's storage version if it is served, else its
// first served version, else "".
func servedVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	first := ""
	for _, v := range crd.Spec.Versions {
		switch {
		case v.Served && v.Storage:
			return v.Name
		case v.Served && first == "":
			first = v.Name
		}
	}
	return first
}

// objectKey is namespace/name, or name for cluster-scoped objects.
func objectKey(obj *unstructured.Unstructured) string {
	return ObjectFailure{Namespace: obj.GetNamespace(), Name: obj.GetName()}.String()
}
