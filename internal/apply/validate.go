package apply

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// validate dry-runs the objects at idx, recording each one's current
// resourceVersion in before, and checks those that exist already against
// the plan's collision rules. Every refusal is collected: the Error's
// Refusals hold them all, its message names up to maxReported.
func (e *Engine) validate(ctx context.Context, p *run, idx []int, before []string) error {
	var listed listedObjects
	if p.direct {
		var err error
		if listed, err = e.listExisting(ctx, p, idx); err != nil {
			return err
		}
	}
	var mu sync.Mutex
	var refused, forbidden, immutable, unserved Refusals
	var collided collisions
	var transient error
	e.each(ctx, idx, func(i int) bool {
		it := p.items[i]
		var obj *metav1.PartialObjectMetadata
		var err error
		switch {
		case createsFirst(p, it) && !listed.exists(it):
			// Created by write, which finds out then whether it
			// exists: not read now.
			p.items[i].create = true
			return true
		case p.direct:
			obj, err = listed.existing(ctx, e, it)
		default:
			if obj, err = e.patch(ctx, it, true); err == nil && createdBy(obj, e.opts.FieldManager) {
				p.items[i].takeOver = true
			}
		}
		if err != nil && e.roleOfPlanMissing(ctx, p, it, err) {
			// A new role of the plan, bound here: validated by its own
			// dry-run; this binding is checked as it stands.
			obj, err = e.existing(ctx, it)
		}
		if fields := immutableFields(err); fields != nil {
			if !e.replaceable(it) {
				mu.Lock()
				immutable = append(immutable, Refusal{ID: it.id, Code: CodeImmutable, Message: e.immutableRefusal(it, fields)})
				mu.Unlock()
				return true
			}
			// It will be deleted and created again: validated as it
			// stands (exists, and whose it is).
			p.items[i].replace = true
			obj, err = e.existing(ctx, it)
		}
		if err == nil {
			before[i] = obj.GetResourceVersion()
			if before[i] == "" {
				return true
			}
			if it.hook != nil && it.hook.policies[beforeHookCreation] {
				// A hook left by an earlier run: created afresh, so
				// that it runs again.
				p.items[i].replace = true
			}
			var current *metav1.PartialObjectMetadata
			if p.direct {
				current = obj // read before any write: what is there now
			}
			c, err := e.collision(ctx, p, it, current)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				if transient == nil {
					transient = err
				}
				return false
			case c.why != "":
				collided.add(it, c)
			}
			return true
		}
		mu.Lock()
		defer mu.Unlock()
		if apierrors.IsForbidden(err) && !terminating(err) {
			// The identity may not write it, or (RBAC) may not grant
			// what it holds: a permission, not a content, problem.
			forbidden = append(forbidden, Refusal{ID: it.id, Code: CodeForbidden, Message: fmt.Sprintf("object %s: %v", it.id, err)})
			return true
		}
		if f := e.classifyAnswer(err, CodeRefused); f != nil {
			r := Refusal{ID: it.id, Code: f.Code, Message: fmt.Sprintf("object %s: %s", it.id, f.Message)}
			if f.Code == CodeUnknownKind {
				unserved = append(unserved, r)
			} else {
				refused = append(refused, r)
			}
			return true
		}
		if transient == nil {
			transient = fmt.Errorf("validating object %s: %w", it.id, err)
		}
		return false
	})
	if len(forbidden) > 0 {
		return refuse(CodeForbidden, forbidden, "the API server forbade %d object(s), nothing was applied: %s")
	}
	if len(unserved) > 0 {
		// The cluster stopped serving a kind the plan was made with:
		// waited for, whatever else is refused.
		return refuse(CodeUnknownKind, unserved, "the cluster does not serve the kind of %d object(s), nothing was applied: %s")
	}
	if len(immutable) > 0 && len(refused) == 0 {
		return refuse(CodeImmutable, immutable, "%d object(s) cannot be updated in place, nothing was applied: %s")
	}
	refused = append(refused, immutable...)
	if len(refused) > 0 {
		return refuse(CodeRefused, refused, "server-side validation refused %d object(s), nothing was applied: %s")
	}
	if collided.any() {
		return collided.refusal("%d object(s) collide, nothing was applied: %s")
	}
	if transient != nil {
		return transient
	}
	return ctx.Err()
}
