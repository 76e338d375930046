package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// written is what an object looked like right after it was applied.
type written struct {
	rv         string
	generation int64
}

// write applies the objects at idx, recording resourceVersions in after
// (and, for objects created or taken here, in before what they were).
// Objects marked create are created; one that exists is checked against
// the collision rules then, and when it may not be taken, the write stops
// and deletes what it created, so that a refused plan leaves nothing it
// created in the phase, as when the collision is found before the write
// (objects it took, existing ones it may adopt, stay, and the refusal
// says so).
func (e *Engine) write(ctx context.Context, p *run, idx []int, before []string, after []written) error {
	var mu sync.Mutex
	var errs []error
	var collided collisions
	var uids []types.UID // of the objects this write created; only a direct apply creates
	if p.direct {
		uids = make([]types.UID, len(p.items))
	}
	fail := func(err error) bool {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
		return false
	}
	e.each(ctx, idx, func(i int) bool {
		it := p.items[i]
		if it.create {
			c, err := e.createOrTake(ctx, p, it)
			before[i] = c.before
			switch {
			case err != nil:
				return fail(e.writeFailure(p, it, err))
			case c.collision.why != "":
				mu.Lock()
				collided.add(it, c.collision)
				mu.Unlock()
				return false
			}
			after[i] = written{rv: c.obj.GetResourceVersion(), generation: c.obj.GetGeneration()}
			if c.before == "" {
				uids[i] = c.obj.GetUID()
			}
			return true
		}
		if it.takeOver {
			if err := e.takeOverCreated(ctx, it); err != nil {
				return fail(err)
			}
		}
		if it.replace {
			if err := e.replace(ctx, it); err != nil {
				return fail(err)
			}
		}
		obj, err := e.applyOrReplace(ctx, it)
		if err != nil {
			return fail(e.writeFailure(p, it, err))
		}
		after[i] = written{rv: obj.GetResourceVersion(), generation: obj.GetGeneration()}
		return true
	})
	if collided.any() {
		left, err := e.undoCreates(context.WithoutCancel(ctx), p, idx, uids)
		for _, i := range idx {
			if uids[i] != "" && !slices.Contains(left, i) {
				after[i] = written{} // deleted again: not written
			}
		}
		stayed := 0 // objects taken (applied), or whose create could not be undone
		for _, i := range idx {
			if after[i].rv != "" {
				stayed++
			}
		}
		refusal := collided.refusal("%d object(s) collide, nothing was applied: %s")
		if stayed > 0 {
			refusal = collided.refusal("%d object(s) collide: %s; %d object(s) written before that stay applied", stayed)
		}
		if err != nil {
			return errors.Join(refusal, err)
		}
		return refusal
	}
	if len(errs) > 0 {
		return firstFailure(errs)
	}
	return ctx.Err()
}

// applyOrReplace applies it's object; when an immutable field refuses the
// apply, not seen by a dry-run (a first install over an existing object),
// it replaces the object if it may, else fails with CodeImmutable.
func (e *Engine) applyOrReplace(ctx context.Context, it item) (*metav1.PartialObjectMetadata, error) {
	obj, err := e.patch(ctx, it, false)
	if fields := immutableFields(err); fields != nil && !it.replace && e.replaceable(it) {
		if err = e.replace(ctx, it); err == nil {
			obj, err = e.patch(ctx, it, false)
		}
	} else if fields != nil {
		err = newError(CodeImmutable, "%s", e.immutableRefusal(it, fields))
	}
	return obj, err
}

// writeFailure reports the failed write of it: a terminal failure when
// writing it again will not help (in a direct apply, whose write is the
// validation, as the dry-run would have reported it), else the error.
func (e *Engine) writeFailure(p *run, it item, err error) error {
	code := CodeWriteFailed
	if p.direct {
		// No dry-run came first: the write is the validation, and
		// its refusals are reported as the dry-run's would be.
		code = CodeRefused
		if apierrors.IsForbidden(err) && !terminating(err) {
			code = CodeForbidden
		}
	}
	if f := e.classifyAnswer(err, code); f != nil {
		return newError(f.Code, "applying object %s: %s", it.id, f.Message)
	}
	return fmt.Errorf("applying object %s: %w", it.id, err)
}
