package apply

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// HookRun says which hooks of a plan run when it is applied (see
// ApplyOptions.Hooks).
type HookRun int

const (
	// HooksNone applies no hook: a revision applied again (after a
	// restart, for a rollback) or drift being corrected.
	HooksNone HookRun = iota
	// HooksInstall runs pre-install and post-install hooks: the first
	// revision of a BundleDeployment.
	HooksInstall
	// HooksUpgrade runs pre-upgrade and post-upgrade hooks: a new
	// revision over an installed one.
	HooksUpgrade
)

// Helm's hook events and delete policies that rukpak acts on.
const (
	helmHookWeight = "helm.sh/hook-weight"
	preInstall     = "pre-install"
	postInstall    = "post-install"
	preUpgrade     = "pre-upgrade"
	postUpgrade    = "post-upgrade"
	hookSucceeded  = "hook-succeeded"
	hookFailed     = "hook-failed"
)

// hookPoll is how often a running hook's status is read.
const hookPoll = 250 * time.Millisecond

// hookSpec is what an object's helm.sh/hook annotations ask for.
type hookSpec struct {
	// events are the install and upgrade events the hook runs at.
	events map[string]bool
	// weight is helm.sh/hook-weight (0 when unset or not a number).
	weight int
	// policies are the helm.sh/hook-delete-policy values.
	policies map[string]bool
}

// phases tells in which hook phases of a run an item is written: pre
// (before the ordinary objects) and post (after them). A hook whose
// helm.sh/hook names both phases of the run (pre-install and post-install,
// say) runs in both, as Helm runs it: created afresh in each (its delete
// policies applied in each), so what one phase deleted is there again when
// the next runs. An ordinary object is in neither; a hook of other events
// only is in neither and not written at all (see runs).
func phases(it item, run HookRun) (pre, post bool) {
	h := it.hook
	switch {
	case h == nil:
		return false, false
	case run == HooksInstall:
		return h.events[preInstall], h.events[postInstall]
	case run == HooksUpgrade:
		return h.events[preUpgrade], h.events[postUpgrade]
	}
	return false, false
}

// phaseNames are the events of run's pre and post phases.
func phaseNames(run HookRun) (pre, post string) {
	if run == HooksUpgrade {
		return preUpgrade, postUpgrade
	}
	return preInstall, postInstall
}

// runs reports whether Apply writes it in run: every ordinary object, and
// the hooks of run's events.
func runs(it item, run HookRun) bool {
	pre, post := phases(it, run)
	return it.hook == nil || pre || post
}

// hookOf reads obj's helm.sh/hook annotations. An object is a hook when
// helm.sh/hook names an install or upgrade event; other events (test,
// delete, rollback) leave it an ordinary object, as rukpak runs none.
func hookOf(obj *unstructured.Unstructured) *hookSpec {
	ann := obj.GetAnnotations()
	events, ok := ann[helmHook]
	if !ok {
		return nil
	}
	h := &hookSpec{events: map[string]bool{}, policies: map[string]bool{}}
	for _, e := range strings.Split(events, ",") {
		switch e = strings.ToLower(strings.TrimSpace(e)); e {
		case preInstall, postInstall, preUpgrade, postUpgrade:
			h.events[e] = true
		}
	}
	if len(h.events) == 0 {
		return nil
	}
	// As Helm reads it: a weight that is not an integer as written
	// (" 5", "1.5", "high") is 0.
	h.weight, _ = strconv.Atoi(ann[helmHookWeight])
	// Helm's default applies only when the annotation is missing; an
	// empty one names no policy.
	policy, set := ann[helmHookDeletePolicy]
	if !set {
		policy = beforeHookCreation
	}
	for _, p := range strings.Split(policy, ",") {
		h.policies[strings.ToLower(strings.TrimSpace(p))] = true
	}
	return h
}

// byWeight splits the hooks at idx into groups of equal weight, lightest
// first, each group by kind and name.
func byWeight(p *run, idx []int) [][]int {
	sort.SliceStable(idx, func(a, b int) bool {
		x, y := p.items[idx[a]], p.items[idx[b]]
		if x.hook.weight != y.hook.weight {
			return x.hook.weight < y.hook.weight
		}
		if x.id.Kind != y.id.Kind {
			return x.id.Kind < y.id.Kind
		}
		return x.id.Name < y.id.Name
	})
	var groups [][]int
	for n, i := range idx {
		if n == 0 || p.items[idx[n-1]].hook.weight != p.items[i].hook.weight {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], i)
	}
	return groups
}

// runHooks writes the hooks at idx, one weight after the other, waiting
// for each weight's Jobs and Pods to succeed. As Helm does, hooks with
// hook-succeeded are deleted once every hook of the phase succeeded (last
// first), and when one fails, it is deleted if it has hook-failed and the
// ones that succeeded before it if they have hook-succeeded.
func (e *Engine) runHooks(ctx context.Context, p *run, phase string, idx []int, before []string, after []written) error {
	var succeeded []item
	for _, group := range byWeight(p, idx) {
		for _, i := range group {
			if after[i].rv != "" {
				// Written by an earlier phase of this run: created
				// afresh when its policy says so (before-hook-creation),
				// else applied as it stands — created again if that
				// phase deleted it (hook-succeeded).
				it := &p.items[i]
				it.create, it.takeOver, it.replace = false, false, it.hook.policies[beforeHookCreation]
			}
		}
		if err := e.write(ctx, p, group, before, after); err != nil {
			return err
		}
		for _, i := range group {
			it := p.items[i]
			if err := e.await(ctx, p, phase, it, after[i].rv); err != nil {
				if it.hook.policies[hookFailed] {
					if derr := e.remove(ctx, it); derr != nil {
						err = fmt.Errorf("%w (deleting it as hook-failed asks: %v)", err, derr)
					}
				}
				if derr := e.removeSucceeded(ctx, succeeded); derr != nil {
					err = fmt.Errorf("%w (%v)", err, derr)
				}
				return err
			}
			succeeded = append(succeeded, it)
		}
	}
	return e.removeSucceeded(ctx, succeeded)
}

// removeSucceeded deletes the hooks with hook-succeeded among done, last
// first.
func (e *Engine) removeSucceeded(ctx context.Context, done []item) error {
	for n := len(done) - 1; n >= 0; n-- {
		if it := done[n]; it.hook.policies[hookSucceeded] {
			if err := e.remove(ctx, it); err != nil {
				return fmt.Errorf("deleting hook %s after its phase succeeded: %w", it.id, err)
			}
		}
	}
	return nil
}

// await waits until a hook Job completes or a hook Pod succeeds (other
// kinds are done once written); rv is its resourceVersion when written. A
// Job or Pod that fails, or does not finish within HookTimeout, is a
// HookFailed failure naming it and, when a warning event said why it could
// not run, that event. The wait is reported to the call's ApplyOptions.OnHookWait.
func (e *Engine) await(ctx context.Context, p *run, phase string, it item, rv string) error {
	if !(it.id.Group == "batch" && it.id.Kind == "Job" || it.id.Group == "" && it.id.Kind == "Pod") {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, e.opts.HookTimeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	hw := e.newHookWatch(p, it, phase, deadline)
	var last string
	var err error
	if w, ok := e.reader.(client.WithWatch); ok && rv != "" {
		last, err = e.watchHook(ctx, w, it, rv, hw)
		if apierrors.IsForbidden(err) {
			// The identity may read but not watch it.
			last, err = e.pollHook(ctx, it, hw)
		}
	} else {
		last, err = e.pollHook(ctx, it, hw)
	}
	if err != nil && As(err) == nil && ctx.Err() == context.DeadlineExceeded {
		return newError(CodeHookFailed, "hook %s did not finish within %s (%s)%s", it.id, e.opts.HookTimeout, last, hw.why())
	}
	return err
}

// watchHook follows the hook's changes from resourceVersion rv, so that
// its end is seen even when it is deleted right after (a Job with
// ttlSecondsAfterFinished: 0): the deletion event carries its last state.
// Meanwhile it reads, every blockedPoll, the warning events about it.
func (e *Engine) watchHook(ctx context.Context, w client.WithWatch, it item, rv string, hw *hookWatch) (string, error) {
	last := "not finished"
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(it.id.GroupVersionKind())
	err := e.live().Get(ctx, client.ObjectKey{Namespace: it.id.Namespace, Name: it.id.Name}, cur)
	switch {
	case err == nil:
		// It may have finished before it was written (unchanged).
		if ok, failed, msg := finished(cur); failed {
			return msg, newError(CodeHookFailed, "hook %s failed: %s", it.id, msg)
		} else if ok {
			return msg, nil
		}
		hw.saw(cur)
		hw.check(ctx)
	case !apierrors.IsNotFound(err):
		return last, fmt.Errorf("reading hook %s: %w", it.id, err)
	}
	tick := time.NewTicker(blockedPoll)
	defer tick.Stop()
	for {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(it.id.GroupVersionKind().GroupVersion().WithKind(it.id.Kind + "List"))
		watcher, err := w.Watch(ctx, list, client.InNamespace(it.id.Namespace),
			&client.ListOptions{Raw: &metav1.ListOptions{FieldSelector: "metadata.name=" + it.id.Name, ResourceVersion: rv, AllowWatchBookmarks: true}})
		if err != nil {
			if ctx.Err() != nil {
				return last, ctx.Err()
			}
			return last, fmt.Errorf("watching hook %s: %w", it.id, err)
		}
		// Events since rv are replayed, a deletion in between included.
		done, err := func() (bool, error) {
			defer watcher.Stop()
			for {
				select {
				case <-ctx.Done():
					return false, ctx.Err()
				case <-tick.C:
					hw.check(ctx)
				case ev, open := <-watcher.ResultChan():
					if !open {
						return false, nil // the server ended the watch: again from rv
					}
					if ev.Type == watch.Error {
						return false, fmt.Errorf("watching hook %s: %v", it.id, apierrors.FromObject(ev.Object))
					}
					obj, ok := ev.Object.(*unstructured.Unstructured)
					if !ok {
						continue
					}
					rv = obj.GetResourceVersion()
					if ev.Type == watch.Bookmark {
						continue
					}
					ok, failed, msg := finished(obj)
					switch {
					case failed:
						return false, newError(CodeHookFailed, "hook %s failed: %s", it.id, msg)
					case ok:
						return true, nil
					case ev.Type == watch.Deleted:
						return false, newError(CodeHookFailed, "hook %s was deleted before it finished", it.id)
					}
					hw.saw(obj)
					last = msg
				}
			}
		}()
		if done || err != nil {
			return last, err
		}
	}
}

// pollHook reads the hook until it finished, for readers that cannot
// watch, and the warning events about it on each read.
func (e *Engine) pollHook(ctx context.Context, it item, hw *hookWatch) (string, error) {
	last := "not finished"
	err := wait.PollUntilContextCancel(ctx, hookPoll, true, func(ctx context.Context) (bool, error) {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(it.id.GroupVersionKind())
		if err := e.live().Get(ctx, client.ObjectKey{Namespace: it.id.Namespace, Name: it.id.Name}, obj); err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			if apierrors.IsNotFound(err) {
				return false, newError(CodeHookFailed, "hook %s was deleted before it finished", it.id)
			}
			return false, fmt.Errorf("reading hook %s: %w", it.id, err)
		}
		done, failed, msg := finished(obj)
		if failed {
			return false, newError(CodeHookFailed, "hook %s failed: %s", it.id, msg)
		}
		last = msg
		if !done {
			hw.saw(obj)
			hw.check(ctx)
		}
		return done, nil
	})
	return last, err
}

// finished reads a Job's or Pod's status: done when it succeeded, failed
// (with why) when it failed for good.
func finished(obj *unstructured.Unstructured) (done, failed bool, msg string) {
	if obj.GetKind() == "Pod" {
		phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
		return phase == "Succeeded", phase == "Failed", "phase " + phase
	}
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	msg = "not finished"
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["status"] != "True" {
			continue
		}
		why, _ := m["message"].(string)
		if why == "" {
			why, _ = m["reason"].(string)
		}
		switch m["type"] {
		case "Complete":
			return true, false, "complete"
		case "Failed":
			return false, true, why
		}
	}
	return false, false, msg
}

// remove deletes a hook as its delete policy asks; its Pods go in the
// background.
func (e *Engine) remove(ctx context.Context, it item) error {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(it.id.GroupVersionKind())
	obj.SetNamespace(it.id.Namespace)
	obj.SetName(it.id.Name)
	return client.IgnoreNotFound(e.c.Delete(ctx, obj, client.PropagationPolicy("Background")))
}
