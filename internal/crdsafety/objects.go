package crdsafety

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// versionCheck judges existing objects, read at one version, under that
// version's installed and new schemas.
type versionCheck struct {
	version  string
	old, new *validator
}

// newVersionCheck builds the check of the version both oldVer and newVer
// describe.
func newVersionCheck(oldVer, newVer *apiextensionsv1.CustomResourceDefinitionVersion) (*versionCheck, error) {
	oldVal, err := newValidator(oldVer)
	if err != nil {
		return nil, fmt.Errorf("installed CRD: %w", err)
	}
	newVal, err := newValidator(newVer)
	if err != nil {
		return nil, fmt.Errorf("new CRD: %w", err)
	}
	return &versionCheck{version: newVer.Name, old: oldVal, new: newVal}, nil
}

// problem is one way an object breaks: the kind and schema path of its
// Finding, and the object's own detail.
type problem struct {
	kind   Kind
	path   string
	detail string
}

// check returns what breaks for one object: schema errors the new schema
// finds and the installed one does not (an object already invalid before
// is not made so by the change), and values the new schema prunes and the
// installed one kept. It returns at most one problem per finding, the
// first in field order.
func (c *versionCheck) check(content map[string]any) ([]problem, error) {
	newErrs, err := c.new.errors(content)
	if err != nil {
		return nil, err
	}
	oldErrs, err := c.old.errors(content)
	if err != nil {
		return nil, err
	}
	had := make(map[errorKey]bool, len(oldErrs))
	for _, e := range oldErrs {
		had[keyOf(e)] = true
	}
	var out []problem
	seen := map[problem]bool{}
	add := func(p problem) {
		key := problem{kind: p.kind, path: p.path}
		if !seen[key] {
			seen[key] = true
			out = append(out, p)
		}
	}
	for _, e := range newErrs {
		if !had[keyOf(e)] {
			add(problem{kind: KindInvalid, path: schemaPath(e.Field, c.new.structural), detail: e.Error()})
		}
	}
	newPruned, err := c.new.pruned(content)
	if err != nil {
		return nil, err
	}
	oldPruned, err := c.old.pruned(content)
	if err != nil {
		return nil, err
	}
	kept := make(map[string]bool, len(oldPruned))
	for _, p := range oldPruned {
		kept[p] = true
	}
	for _, p := range newPruned {
		if !kept[p] {
			add(problem{kind: KindPruned, path: schemaPath(p, c.old.structural), detail: p + ": value would be pruned"})
		}
	}
	return out, nil
}

// errorKey identifies a validation error independently of its message,
// which may quote the bound that changed.
type errorKey struct {
	field string
	typ   field.ErrorType
}

// keyOf is the key of e.
func keyOf(e *field.Error) errorKey { return errorKey{field: e.Field, typ: e.Type} }
