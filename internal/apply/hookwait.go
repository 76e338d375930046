package apply

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/internal/inventory"
)

// HookWait is what Apply reports while it waits for a hook Job or Pod
// (see ApplyOptions.OnHookWait).
type HookWait struct {
	// ID names the hook.
	ID inventory.ID
	// Phase is the hook phase it runs in: pre-install, post-install,
	// pre-upgrade or post-upgrade.
	Phase string
	// Deadline is when the wait gives up (Options.HookTimeout after the
	// hook was written).
	Deadline time.Time
	// Blocked, when set, is why the hook cannot make progress, from the
	// newest warning event about it: its Job cannot create its Pods
	// ("FailedCreate: … serviceaccount \"x\" not found", a quota), its Pod
	// cannot be scheduled or its image pulled. Empty while nothing is
	// known to be wrong.
	Blocked string
}

// blockedPoll is how often the warning events of a hook being waited for
// are read.
const blockedPoll = 2 * time.Second

// hookWatch follows one hook's wait: it reports it to the call's
// ApplyOptions.OnHookWait and reads the warning events about it.
type hookWatch struct {
	e      *Engine
	report func(HookWait)
	wait   HookWait
	uid    types.UID
}

// newHookWatch starts following it, waited for in phase until deadline.
func (e *Engine) newHookWatch(p *run, it item, phase string, deadline time.Time) *hookWatch {
	w := &hookWatch{e: e, report: p.onHookWait, wait: HookWait{ID: it.id, Phase: phase, Deadline: deadline}}
	w.send()
	return w
}

// saw records the hook's current state (its UID: events are matched to
// this incarnation of it, not to one an earlier revision left).
func (w *hookWatch) saw(obj *unstructured.Unstructured) {
	if uid := obj.GetUID(); uid != "" {
		w.uid = uid
	}
}

// check reads the newest warning event about the hook and reports it when
// it changed. Events that cannot be read (the identity may not list them)
// leave the wait as it is: the hook's own status still ends it.
func (w *hookWatch) check(ctx context.Context) {
	if w.uid == "" {
		return
	}
	msg := w.e.blockedBy(ctx, w.wait.ID.Namespace, w.uid)
	if msg == "" || msg == w.wait.Blocked {
		return
	}
	w.wait.Blocked = msg
	w.send()
}

func (w *hookWatch) send() {
	if w.report != nil {
		w.report(w.wait)
	}
}

// why says what blocked the hook, for a timeout's message; "" when
// nothing was seen.
func (w *hookWatch) why() string {
	if w.wait.Blocked == "" {
		return ""
	}
	return "; it could not run: " + w.wait.Blocked
}

// blockedBy returns "Reason: message" of the newest warning event about
// the object of uid in ns, or "" when there is none or events cannot be
// read.
func (e *Engine) blockedBy(ctx context.Context, ns string, uid types.UID) string {
	r := e.opts.Events
	if r == nil {
		r = e.reader
	}
	list := &corev1.EventList{}
	if err := r.List(ctx, list, client.InNamespace(ns), client.MatchingFields{"involvedObject.uid": string(uid), "type": corev1.EventTypeWarning}); err != nil {
		return ""
	}
	if len(list.Items) == 0 {
		return ""
	}
	sort.SliceStable(list.Items, func(a, b int) bool { return eventTime(&list.Items[a]).Before(eventTime(&list.Items[b])) })
	ev := list.Items[len(list.Items)-1]
	msg := ev.Message
	if len(msg) > maxBlockedMessage {
		msg = msg[:maxBlockedMessage] + "…"
	}
	return fmt.Sprintf("%s: %s", ev.Reason, msg)
}

// maxBlockedMessage bounds how much of an event's message is reported.
const maxBlockedMessage = 512

// eventTime is when an event last happened.
func eventTime(ev *corev1.Event) time.Time {
	switch {
	case ev.Series != nil && !ev.Series.LastObservedTime.IsZero():
		return ev.Series.LastObservedTime.Time
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	}
	return ev.CreationTimestamp.Time
}
