package apply

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Apply validates and applies the plan (see the package doc for the order)
// and returns what it did. A refused object fails the plan before the first
// write, or — for objects that need a CRD or Namespace of the same bundle —
// before the second phase is written. A failure before the first write
// returns no ChangeSet; once writes began, the ChangeSet says what was
// written. opts are this call's settings; p is not changed.
func (e *Engine) Apply(ctx context.Context, plan *Plan, opts ApplyOptions) (*ChangeSet, error) {
	p := newRun(plan, opts)
	deferred, err := e.deferred(ctx, p)
	if err != nil {
		return nil, err
	}
	before := make([]string, len(p.items)) // resourceVersion before the write; "" if absent
	var now, later, first, pre, roles, rest, post []int
	for i, it := range p.items {
		if !runs(it, p.hookRun) {
			continue
		}
		if deferred[i] {
			later = append(later, i)
		} else {
			now = append(now, i)
		}
		inPre, inPost := phases(it, p.hookRun)
		switch {
		case it.phase == phaseFirst:
			first = append(first, i)
		case it.hook == nil && isRole(it):
			roles = append(roles, i)
		case it.hook == nil:
			rest = append(rest, i)
		}
		if inPre {
			pre = append(pre, i)
		}
		if inPost {
			post = append(post, i)
		}
	}
	if err := e.validate(ctx, p, now, before); err != nil {
		return nil, err
	}
	after := make([]written, len(p.items))
	done := first
	if err := e.write(ctx, p, first, before, after); err != nil {
		return e.changes(p, done, before, after), err
	}
	if err := e.waitEstablished(ctx, p, first); err != nil {
		return e.changes(p, done, before, after), err
	}
	if err := e.validate(ctx, p, later, before); err != nil {
		return e.changes(p, done, before, after), err
	}
	inDone := make([]bool, len(p.items)) // a hook of two phases is reported once
	preName, postName := phaseNames(p.hookRun)
	for _, stage := range []struct {
		idx  []int
		hook string
	}{{pre, preName}, {roles, ""}, {rest, ""}, {post, postName}} {
		for _, i := range stage.idx {
			if !inDone[i] {
				inDone[i] = true
				done = append(done, i)
			}
		}
		if stage.hook != "" {
			err = e.runHooks(ctx, p, stage.hook, stage.idx, before, after)
		} else {
			err = e.write(ctx, p, stage.idx, before, after)
		}
		if err != nil {
			break
		}
	}
	return e.changes(p, done, before, after), err
}

// deferred marks the objects that cannot be validated before the first
// phase is applied: their kind comes from a CRD of the bundle, or their
// namespace is a Namespace of the bundle that does not exist yet.
func (e *Engine) deferred(ctx context.Context, p *run) ([]bool, error) {
	missing := map[string]bool{}
	for ns := range p.namespaces {
		err := e.live().Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
		switch {
		case apierrors.IsNotFound(err):
			missing[ns] = true
		case err != nil:
			return nil, fmt.Errorf("getting namespace %s: %w", ns, err)
		}
	}
	out := make([]bool, len(p.items))
	for i, it := range p.items {
		out[i] = it.phase == phaseRest && (it.needsCRD || missing[it.id.Namespace])
	}
	return out, nil
}
