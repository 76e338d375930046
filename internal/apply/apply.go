package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// maxReported bounds how many refused objects one message names.
const maxReported = 5

// Apply validates and applies the plan (see the package doc for the order)
// and returns what it did. A refused object fails the plan before the first
// write, or — for objects that need a CRD or Namespace of the same bundle —
// before the second phase is written. A failure before the first write
// returns no ChangeSet; once writes began, the ChangeSet says what was
// written.
func (e *Engine) Apply(ctx context.Context, p *Plan) (*ChangeSet, error) {
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
func (e *Engine) deferred(ctx context.Context, p *Plan) ([]bool, error) {
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

// validate dry-runs the objects at idx, recording each one's current
// resourceVersion in before, and checks those that exist already against
// the plan's collision rules. Every refusal is collected, so the message
// names all (up to maxReported) refused objects.
func (e *Engine) validate(ctx context.Context, p *Plan, idx []int, before []string) error {
	var listed listedObjects
	if p.direct {
		var err error
		if listed, err = e.listExisting(ctx, p, idx); err != nil {
			return err
		}
	}
	var mu sync.Mutex
	var refused, collided, forbidden, immutable []string
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
			if !replaceable(it) {
				mu.Lock()
				immutable = append(immutable, immutableRefusal(it, fields))
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
			why, err := e.collision(ctx, p, it, current)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				if transient == nil {
					transient = err
				}
				return false
			case why != "":
				collided = append(collided, why)
			}
			return true
		}
		mu.Lock()
		defer mu.Unlock()
		if apierrors.IsForbidden(err) && !terminating(err) {
			// The identity may not write it, or (RBAC) may not grant
			// what it holds: a permission, not a content, problem.
			forbidden = append(forbidden, fmt.Sprintf("object %s: %v", it.id, err))
			return true
		}
		if f := classify(err, v1alpha2.ReasonValidationFailed); f != nil {
			refused = append(refused, fmt.Sprintf("object %s: %s", it.id, f.Message))
			return true
		}
		if transient == nil {
			transient = fmt.Errorf("validating object %s: %w", it.id, err)
		}
		return false
	})
	if len(forbidden) > 0 {
		return failure.New(v1alpha2.ReasonMissingPermissions, "the API server forbade %d object(s), nothing was applied: %s", len(forbidden), list(forbidden))
	}
	if len(immutable) > 0 && len(refused) == 0 {
		return failure.New(v1alpha2.ReasonImmutableFieldChanged, "%d object(s) cannot be updated in place, nothing was applied: %s", len(immutable), list(immutable))
	}
	refused = append(refused, immutable...)
	if len(refused) > 0 {
		return failure.New(v1alpha2.ReasonValidationFailed, "server-side validation refused %d object(s), nothing was applied: %s", len(refused), list(refused))
	}
	if len(collided) > 0 {
		return failure.New(v1alpha2.ReasonCollision, "%d object(s) collide, nothing was applied: %s", len(collided), list(collided))
	}
	if transient != nil {
		return transient
	}
	return ctx.Err()
}

// list joins up to maxReported of msgs, sorted, and says how many more.
func list(msgs []string) string {
	sort.Strings(msgs)
	msg := strings.Join(msgs[:min(len(msgs), maxReported)], "; ")
	if len(msgs) > maxReported {
		msg += fmt.Sprintf("; and %d more", len(msgs)-maxReported)
	}
	return msg
}

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
func (e *Engine) write(ctx context.Context, p *Plan, idx []int, before []string, after []written) error {
	var mu sync.Mutex
	var errs []error
	var collided []string
	var uids []types.UID // of the objects this write created; only a direct plan creates
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
			case c.collision != "":
				mu.Lock()
				collided = append(collided, c.collision)
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
	if len(collided) > 0 {
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
		refusal := failure.New(v1alpha2.ReasonCollision, "%d object(s) collide, nothing was applied: %s", len(collided), list(collided))
		if stayed > 0 {
			refusal = failure.New(v1alpha2.ReasonCollision, "%d object(s) collide: %s; %d object(s) written before that stay applied", len(collided), list(collided), stayed)
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
// it replaces the object if it may, else reports ImmutableFieldChanged.
func (e *Engine) applyOrReplace(ctx context.Context, it item) (*metav1.PartialObjectMetadata, error) {
	obj, err := e.patch(ctx, it, false)
	if fields := immutableFields(err); fields != nil && !it.replace && replaceable(it) {
		if err = e.replace(ctx, it); err == nil {
			obj, err = e.patch(ctx, it, false)
		}
	} else if fields != nil {
		err = failure.New(v1alpha2.ReasonImmutableFieldChanged, "%s", immutableRefusal(it, fields))
	}
	return obj, err
}

// writeFailure reports the failed write of it: a terminal failure when
// writing it again will not help (in a direct plan, whose write is the
// validation, as the dry-run would have reported it), else the error.
func (e *Engine) writeFailure(p *Plan, it item, err error) error {
	reason := v1alpha2.ReasonApplyFailed
	if p.direct {
		// No dry-run came first: the write is the validation, and
		// its refusals are reported as the dry-run's would be.
		reason = v1alpha2.ReasonValidationFailed
		if apierrors.IsForbidden(err) && !terminating(err) {
			reason = v1alpha2.ReasonMissingPermissions
		}
	}
	if f := classify(err, reason); f != nil {
		return failure.New(f.Reason, "applying object %s: %s", it.id, f.Message)
	}
	return fmt.Errorf("applying object %s: %w", it.id, err)
}

// existing reads the metadata of it's object as it is; an object that does
// not exist comes back empty (no resourceVersion).
func (e *Engine) existing(ctx context.Context, it item) (*metav1.PartialObjectMetadata, error) {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(it.id.GroupVersionKind())
	err := e.live().Get(ctx, client.ObjectKey{Namespace: it.id.Namespace, Name: it.id.Name}, obj)
	if apierrors.IsNotFound(err) {
		return &metav1.PartialObjectMetadata{}, nil
	}
	return obj, err
}

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
		return nil, failure.New(v1alpha2.ReasonInvalidContent, "encoding object %s: %v", it.id, err)
	}
	opts := metav1.PatchOptions{FieldManager: e.opts.FieldManager, Force: ptr.To(true)}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return ri.Patch(ctx, it.id.Name, types.ApplyPatchType, body, opts)
}

// changes reports what happened to the objects at idx that were written.
func (e *Engine) changes(p *Plan, idx []int, before []string, after []written) *ChangeSet {
	cs := &ChangeSet{}
	for _, i := range idx {
		if after[i].rv == "" {
			continue
		}
		a := Configured
		switch before[i] {
		case "":
			a = Created
		case after[i].rv:
			a = Unchanged
		}
		obj := p.items[i].obj
		cs.add(Change{ID: p.items[i].id, Action: a, Resource: p.items[i].resource, ResourceVersion: after[i].rv, Generation: after[i].generation,
			Labels: obj.GetLabels(), Annotations: obj.GetAnnotations(), Hash: p.items[i].hash, RunOnce: p.items[i].runOnce, Hook: p.items[i].hook != nil})
	}
	return cs
}

// each runs fn for every index on at most Concurrency goroutines, stopping
// early once fn returns false or ctx is done.
func (e *Engine) each(ctx context.Context, idx []int, fn func(i int) bool) {
	if len(idx) == 0 {
		return
	}
	var next atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < min(e.opts.Concurrency, len(idx)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() && ctx.Err() == nil {
				n := int(next.Add(1) - 1)
				if n >= len(idx) {
					return
				}
				if !fn(idx[n]) {
					stop.Store(true)
				}
			}
		}()
	}
	wg.Wait()
}

// terminating reports whether a Forbidden error only says the namespace is
// being deleted, which passes.
func terminating(err error) bool { return strings.Contains(err.Error(), "being terminated") }

// classify returns a terminal failure for errors that retrying the same
// objects will not fix (the object is invalid, its kind is not served, its
// namespace does not exist), or nil for transient ones.
func classify(err error, reason string) *failure.Error {
	if f := failure.As(err); f != nil {
		return f
	}
	if meta.IsNoMatchError(err) {
		return failure.New(v1alpha2.ReasonUnknownKind, "%v", err)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return nil
	}
	switch {
	case apierrors.IsNotFound(err) && namespaceMissing(status):
		return failure.New(v1alpha2.ReasonNamespaceNotFound, "%v", err)
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsNotFound(err),
		apierrors.IsRequestEntityTooLargeError(err), apierrors.IsMethodNotSupported(err),
		apierrors.IsUnsupportedMediaType(err), apierrors.IsNotAcceptable(err):
		return failure.New(reason, "%v", err)
	case apierrors.IsForbidden(err) && !terminating(err):
		return failure.New(reason, "%v", err)
	case apierrors.IsInternalError(err) && strings.Contains(err.Error(), "failed to create typed patch object"):
		// Server-side apply cannot merge the object: its content
		// breaks the schema's list or map rules (such as two
		// entries with the same key), however often it is sent.
		return failure.New(reason, "%v", err)
	}
	return nil
}

// namespaceMissing reports whether a NotFound status is about the
// object's namespace rather than the object.
func namespaceMissing(status apierrors.APIStatus) bool {
	d := status.Status().Details
	return d != nil && d.Kind == "namespaces"
}
