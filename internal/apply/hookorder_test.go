//go:build integration

package apply_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/rukpak/rukpak/internal/apply"
)

// helmPhases are the hook events Helm executes for an install and an
// upgrade, in order (Helm 4 pkg/action: install.go and upgrade.go call
// execHook for the pre event, write the release's objects, then call
// execHook for the post event).
var helmPhases = map[apply.HookRun][2]string{
	apply.HooksInstall: {"pre-install", "post-install"},
	apply.HooksUpgrade: {"pre-upgrade", "post-upgrade"},
}

// helmModel is what Helm's execHook does to one hook object, as a trace of
// the events a watch of it sees: for every phase the hook's
// helm.sh/hook lists, before-hook-creation (the default when the hook
// names no policy) deletes it, and waits until it is gone, before it is
// created; a hook that still exists without that policy is updated in
// place (no event here); once the phase succeeded, hook-succeeded deletes
// it. The ordinary object "app" is written between the two phases, and is
// created only by the first run.
type helmModel struct {
	events   []string
	policies []string // nil: no helm.sh/hook-delete-policy annotation
	exists   bool
	app      bool
}

func (m *helmModel) run(run apply.HookRun) []string {
	var trace []string
	policies := m.policies
	if policies == nil {
		policies = []string{"before-hook-creation"}
	}
	phase := func(event string) {
		if !slices.Contains(m.events, event) {
			return
		}
		if slices.Contains(policies, "before-hook-creation") && m.exists {
			trace, m.exists = append(trace, "DELETED hook"), false
		}
		if !m.exists {
			trace, m.exists = append(trace, "ADDED hook"), true
		}
		if slices.Contains(policies, "hook-succeeded") {
			trace, m.exists = append(trace, "DELETED hook"), false
		}
	}
	phase(helmPhases[run][0])
	if !m.app {
		trace, m.app = append(trace, "ADDED app"), true
	}
	phase(helmPhases[run][1])
	return trace
}

// configMapEvents records the ADDED and DELETED events of the ConfigMaps
// of a namespace, in the order the API server sends them (one watch: the
// order of the writes), following the watch when the server closes it.
type configMapEvents struct {
	mu     sync.Mutex
	events []string
}

func watchConfigMaps(t *testing.T, ns string) *configMapEvents {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	list, err := cs.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return cs.CoreV1().ConfigMaps(ns).Watch(ctx, o)
		},
	})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	rec := &configMapEvents{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok || cm.Name == "kube-root-ca.crt" || (ev.Type != watch.Added && ev.Type != watch.Deleted) {
				continue
			}
			rec.mu.Lock()
			rec.events = append(rec.events, fmt.Sprintf("%s %s", ev.Type, cm.Name))
			rec.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); w.Stop(); <-done })
	return rec
}

// take returns the events recorded since the last take, once the event of
// a marker ConfigMap written after the apply arrived (so none is missing).
func (r *configMapEvents) take(t *testing.T, ns, marker string) []string {
	t.Helper()
	if err := env.Client.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: marker, Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	var got []string
	err := wait(func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		i := slices.Index(r.events, "ADDED "+marker)
		if i < 0 {
			return false
		}
		got = r.events[:i]
		r.events = append([]string(nil), r.events[i+1:]...)
		return true
	})
	if err != nil {
		t.Fatalf("the marker %s was not seen: %v", marker, err)
	}
	return got
}

// TestHooksRunAsHelmRuns: for a hook listed in one, two and four phases,
// with each delete policy, an install and then an upgrade create and
// delete the hook exactly as Helm's execHook does (helmModel): a hook of
// two phases is created again in the second, and what hook-succeeded
// deleted at the end of one phase is there again for the next.
func TestHooksRunAsHelmRuns(t *testing.T) {
	eventSets := [][]string{
		{"pre-install"},
		{"post-install"},
		{"pre-upgrade", "post-upgrade"},
		{"pre-install", "post-install"},
		{"pre-install", "pre-upgrade", "post-install", "post-upgrade"},
	}
	policySets := [][]string{nil, {"before-hook-creation"}, {"hook-succeeded"}, {"hook-failed"}, {"before-hook-creation", "hook-succeeded"}}
	e := hookEngine(t, 20*time.Second)
	for _, events := range eventSets {
		for _, policies := range policySets {
			name := strings.Join(events, ",") + "/" + strings.Join(policies, ",")
			if policies == nil {
				name = strings.Join(events, ",") + "/default"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				ns := env.Namespace(t, "hook-order")
				rec := watchConfigMaps(t, ns)
				ann := fmt.Sprintf("helm.sh/hook: %q", strings.Join(events, ","))
				if policies != nil {
					ann += fmt.Sprintf(", helm.sh/hook-delete-policy: %q", strings.Join(policies, ","))
				}
				hook := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hook\n  annotations: {%s}\ndata: {a: b}\n", ann)
				model := &helmModel{events: events, policies: policies}
				for i, run := range []apply.HookRun{apply.HooksInstall, apply.HooksUpgrade} {
					p, err := e.Prepare(objs(t, cm("app", "", "x"), hook), ns, apply.Owner{Name: "bd", Revision: fmt.Sprintf("r%d", i+1), UID: "uid-1"})
					if err != nil {
						t.Fatal(err)
					}
					if _, err := e.Apply(context.Background(), p, apply.ApplyOptions{Hooks: run}); err != nil {
						t.Fatalf("run %d: %v", i+1, err)
					}
					got, want := rec.take(t, ns, fmt.Sprintf("marker-%d", i)), model.run(run)
					if !slices.Equal(got, want) {
						t.Errorf("run %d (%s, %s): the hook's events are %q, Helm's are %q", i+1, helmPhases[run][0], helmPhases[run][1], got, want)
					}
				}
			})
		}
	}
}
