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

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// hookJob is a Job with the given helm.sh annotations.
func hookJob(name, annotations, image string) string {
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: %s
  annotations: {%s}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: main, image: %q}
`, name, annotations, image)
}

// jobController plays kube-controller-manager's Job controller for the
// Jobs of one namespace, which envtest does not run: it records the order
// in which Jobs and ConfigMaps appear, and finishes each Job it sees —
// Failed when its name is in fail, else Complete — once every object that
// appeared is on record.
type jobController struct {
	t    *testing.T
	ns   string
	fail map[string]bool

	mu sync.Mutex
	// seen are "Kind/name" in the order they were first seen.
	seen []string
	// uids are the UIDs of the Jobs seen, by name.
	uids map[string][]string
	// context are the ConfigMaps there when a Job was finished, by Job.
	context map[string][]string
}

// run polls the namespace until ctx is done.
func (j *jobController) run(ctx context.Context) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		cms := &corev1.ConfigMapList{}
		jobs := &batchv1.JobList{}
		if env.Client.List(ctx, cms, client.InNamespace(j.ns)) == nil && env.Client.List(ctx, jobs, client.InNamespace(j.ns)) == nil {
			j.mu.Lock()
			for _, c := range cms.Items {
				j.note("ConfigMap/" + c.Name)
			}
			for _, job := range jobs.Items {
				j.note("Job/" + job.Name)
				if uids := j.uids[job.Name]; len(uids) == 0 || uids[len(uids)-1] != string(job.UID) {
					j.uids[job.Name] = append(j.uids[job.Name], string(job.UID))
				}
			}
			for _, job := range jobs.Items {
				if len(job.Status.Conditions) == 0 {
					j.context[job.Name] = nil
					for _, c := range cms.Items {
						j.context[job.Name] = append(j.context[job.Name], c.Name)
					}
				}
			}
			j.mu.Unlock()
			for i := range jobs.Items {
				j.finish(ctx, &jobs.Items[i])
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (j *jobController) note(key string) {
	for _, k := range j.seen {
		if k == key {
			return
		}
	}
	j.seen = append(j.seen, key)
}

// finish ends the Job as the Job controller would.
func (j *jobController) finish(ctx context.Context, job *batchv1.Job) {
	_, err := envtest.FinishJob(ctx, env.Client, job, j.fail[job.Name])
	if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) && ctx.Err() == nil {
		j.t.Errorf("finishing Job %s: %v", job.Name, err)
	}
}

// order returns the objects seen, in order.
func (j *jobController) order() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.seen...)
}

// configMapsAt returns the ConfigMaps there when the Job name finished.
func (j *jobController) configMapsAt(name string) []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.context[name]
}

// runs returns how many Jobs of name were seen (distinct UIDs).
func (j *jobController) runs(name string) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.uids[name])
}

// startJobs starts a jobController for ns until the test ends.
func startJobs(t *testing.T, ns string, fail ...string) *jobController {
	j := &jobController{t: t, ns: ns, fail: map[string]bool{}, uids: map[string][]string{}, context: map[string][]string{}}
	for _, f := range fail {
		j.fail[f] = true
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); j.run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return j
}

// hookEngine is newEngine with a HookTimeout, reading with a client that
// can watch (so hooks are watched; newEngine's engine polls them).
func hookEngine(t *testing.T, timeout time.Duration) *apply.Engine {
	t.Helper()
	return engineOver(t, env.Config, true, timeout)
}

// before reports whether a comes before b in order (both present).
func before(order []string, a, b string) bool {
	ia, ib := -1, -1
	for i, k := range order {
		switch k {
		case a:
			ia = i
		case b:
			ib = i
		}
	}
	return ia >= 0 && ib >= 0 && ia < ib
}

// TestHookPhases: pre hooks run (and their Jobs complete) before the other
// objects are written, post hooks after them, lighter weights first; only
// the hooks of the run's event are written; a failed hook stops the
// revision with HookFailed naming it; delete policies are honoured.
func TestHookPhases(t *testing.T) {
	ctx := context.Background()
	e := hookEngine(t, 20*time.Second)
	bundle := func(image string) []string {
		return []string{
			cm("app", "", image),
			hookJob("post", `helm.sh/hook: "post-install,post-upgrade"`, image),
			hookJob("pre-late", `helm.sh/hook: "pre-install,pre-upgrade", helm.sh/hook-weight: "5"`, image),
			hookJob("pre-early", `helm.sh/hook: "pre-install,pre-upgrade", helm.sh/hook-weight: "-1", helm.sh/hook-delete-policy: hook-succeeded`, image),
			hookJob("install-only", `helm.sh/hook: pre-install`, image),
			hookJob("upgrade-only", `helm.sh/hook: post-upgrade`, image),
			hookJob("test", `helm.sh/hook: test`, image),
			// Like a hook Job's ServiceAccount: deleted on success, but
			// only once the whole phase succeeded.
			`apiVersion: v1
kind: ConfigMap
metadata:
  name: post-needs
  annotations: {helm.sh/hook: "post-install,post-upgrade", helm.sh/hook-weight: "-5", helm.sh/hook-delete-policy: "before-hook-creation,hook-succeeded"}
`,
		}
	}
	tests := []struct {
		name string
		run  apply.HookRun
		fail []string
		// err is a substring of the HookFailed message, "" for success.
		err string
		// present and absent are the objects there after the apply.
		present, absent []string
		// order are pairs (a, b): a was written before b.
		order [][2]string
		// during maps a Job to a ConfigMap there while it ran.
		during map[string]string
	}{
		{
			name:    "install",
			run:     apply.HooksInstall,
			present: []string{"ConfigMap/app", "Job/post", "Job/pre-late", "Job/install-only", "Job/test"},
			absent:  []string{"Job/pre-early", "Job/upgrade-only", "ConfigMap/post-needs"},
			order:   [][2]string{{"Job/pre-early", "Job/pre-late"}, {"Job/pre-late", "ConfigMap/app"}, {"Job/install-only", "ConfigMap/app"}, {"ConfigMap/app", "ConfigMap/post-needs"}, {"ConfigMap/post-needs", "Job/post"}},
			during:  map[string]string{"post": "post-needs"},
		},
		{
			name:    "upgrade hooks only on an upgrade",
			run:     apply.HooksUpgrade,
			present: []string{"ConfigMap/app", "Job/post", "Job/upgrade-only", "Job/pre-late"},
			absent:  []string{"Job/install-only", "Job/pre-early"},
			order:   [][2]string{{"Job/pre-late", "ConfigMap/app"}, {"ConfigMap/app", "Job/upgrade-only"}},
		},
		{
			name:    "no hooks when a revision is applied again",
			run:     apply.HooksNone,
			present: []string{"ConfigMap/app", "Job/test"},
			absent:  []string{"Job/post", "Job/pre-late", "Job/pre-early", "Job/install-only", "Job/upgrade-only"},
		},
		{
			name:    "a failed pre hook stops the revision before its objects",
			run:     apply.HooksInstall,
			fail:    []string{"pre-late"},
			err:     "hook Job.batch NS/pre-late failed: Job has reached the specified backoff limit",
			present: []string{"Job/pre-late"},
			absent:  []string{"ConfigMap/app", "Job/post"},
		},
		{
			name:    "a failed post hook fails the revision after its objects",
			run:     apply.HooksInstall,
			fail:    []string{"post"},
			err:     "hook Job.batch NS/post failed",
			present: []string{"ConfigMap/app", "Job/post"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := env.Namespace(t, "hooks")
			jobs := startJobs(t, ns, tt.fail...)
			p, err := e.Prepare(objs(t, bundle("one")...), ns, apply.Owner{Name: "bd", Revision: "r1", UID: "uid-1"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Apply(ctx, p, apply.ApplyOptions{Hooks: tt.run})
			if tt.err == "" && err != nil {
				t.Fatal(err)
			}
			if tt.err != "" {
				f := apply.As(err)
				want := strings.ReplaceAll(tt.err, "NS", ns)
				if f == nil || f.Code != apply.CodeHookFailed || !strings.Contains(f.Message, want) {
					t.Fatalf("err = %v, want HookFailed with %q", err, want)
				}
			}
			for _, key := range tt.present {
				kind, name, _ := strings.Cut(key, "/")
				if !exists(t, apiVersionOf(kind), kind, ns, name) {
					t.Errorf("%s is not there", key)
				}
			}
			for _, key := range tt.absent {
				kind, name, _ := strings.Cut(key, "/")
				if exists(t, apiVersionOf(kind), kind, ns, name) {
					t.Errorf("%s is there", key)
				}
			}
			for job, cm := range tt.during {
				if !slices.Contains(jobs.configMapsAt(job), cm) {
					t.Errorf("ConfigMap %s was not there while Job %s ran: %v", cm, job, jobs.configMapsAt(job))
				}
			}
			order := jobs.order()
			for _, pair := range tt.order {
				if !before(order, pair[0], pair[1]) {
					t.Errorf("%s was not written before %s: %v", pair[0], pair[1], order)
				}
			}
		})
	}
}

func apiVersionOf(kind string) string {
	if kind == "Job" {
		return "batch/v1"
	}
	return "v1"
}

// TestHookRunsAgainEachRevision: a hook left by the previous revision is
// deleted and created again (before-hook-creation, the default), so it
// runs once per revision, even when its pod template is unchanged; one
// deleted on success is simply created again.
func TestHookRunsAgainEachRevision(t *testing.T) {
	ctx := context.Background()
	e := hookEngine(t, 20*time.Second)
	ns := env.Namespace(t, "hook-rerun")
	jobs := startJobs(t, ns)
	for i, rev := range []string{"r1", "r2", "r3"} {
		run := apply.HooksUpgrade
		if i == 0 {
			run = apply.HooksInstall
		}
		p, err := e.Prepare(objs(t,
			hookJob("migrate", `helm.sh/hook: "pre-install,pre-upgrade"`, "same"),
			hookJob("notify", `helm.sh/hook: "post-install,post-upgrade", helm.sh/hook-delete-policy: hook-succeeded`, "same"),
			cm("app", "", "same")), ns, apply.Owner{Name: "bd", Revision: rev, UID: "uid-1"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Apply(ctx, p, apply.ApplyOptions{Hooks: run}); err != nil {
			t.Fatalf("%s: %v", rev, err)
		}
		if got := jobs.runs("migrate"); got != i+1 {
			t.Fatalf("after %s the migrate hook ran %d times, want %d", rev, got, i+1)
		}
		if got := jobs.runs("notify"); got != i+1 {
			t.Fatalf("after %s the notify hook ran %d times, want %d", rev, got, i+1)
		}
		if exists(t, "batch/v1", "Job", ns, "notify") {
			t.Fatalf("after %s the notify hook (hook-succeeded) is still there", rev)
		}
	}
}

// TestHookRemovedAsItFinishes: a hook Job deleted the moment it finished
// (ttlSecondsAfterFinished: 0) is seen to have succeeded, or failed: its
// end is watched, not polled for.
func TestHookRemovedAsItFinishes(t *testing.T) {
	ctx := context.Background()
	e := hookEngine(t, 20*time.Second)
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("failed=%v", fail), func(t *testing.T) {
			ns := env.Namespace(t, "hook-ttl")
			var failing []string
			if fail {
				failing = append(failing, "migrate")
			}
			startJobs(t, ns, failing...)
			job := strings.Replace(hookJob("migrate", `helm.sh/hook: pre-install`, "x"), "spec:\n  template:", "spec:\n  ttlSecondsAfterFinished: 0\n  template:", 1)
			p, err := e.Prepare(objs(t, job, cm("app", "", "x")), ns, apply.Owner{Name: "bd", Revision: "r1", UID: "uid-1"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Apply(ctx, p, apply.ApplyOptions{Hooks: apply.HooksInstall})
			if fail {
				if f := apply.As(err); f == nil || f.Code != apply.CodeHookFailed || !strings.Contains(f.Message, "failed: Job has reached the specified backoff limit") {
					t.Fatalf("err = %v, want HookFailed: the Job failed", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !exists(t, "v1", "ConfigMap", ns, "app") {
				t.Fatal("the revision's objects were not written after its hook succeeded")
			}
		})
	}
}

// TestHookTimeout: a hook Job that does not finish in time fails the
// revision with HookFailed, and hook-failed deletes it.
func TestHookTimeout(t *testing.T) {
	ctx := context.Background()
	e := hookEngine(t, time.Second)
	ns := env.Namespace(t, "hook-timeout")
	p, err := e.Prepare(objs(t, hookJob("slow", `helm.sh/hook: pre-install, helm.sh/hook-delete-policy: hook-failed`, "x"), cm("app", "", "x")),
		ns, apply.Owner{Name: "bd", Revision: "r1", UID: "uid-1"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Apply(ctx, p, apply.ApplyOptions{Hooks: apply.HooksInstall})
	f := apply.As(err)
	if f == nil || f.Code != apply.CodeHookFailed || !strings.Contains(f.Message, "Job.batch "+ns+"/slow did not finish within 1s") {
		t.Fatalf("err = %v, want HookFailed: did not finish within 1s", err)
	}
	if exists(t, "v1", "ConfigMap", ns, "app") {
		t.Fatal("the revision's objects were written after its pre-install hook failed")
	}
	err = wait(func() bool { return !exists(t, "batch/v1", "Job", ns, "slow") })
	if err != nil {
		t.Fatal("the hook-failed hook was not deleted")
	}
}

// wait polls cond for up to 10 seconds.
func wait(cond func() bool) error {
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// TestHookBlockedIsReported: while a hook Job cannot create its Pods (the
// Job controller's FailedCreate warning), the wait reports it within
// seconds, and a wait that times out names that event, not "not
// finished".
func TestHookBlockedIsReported(t *testing.T) {
	ctx := context.Background()
	e := hookEngine(t, 8*time.Second)
	ns := env.Namespace(t, "hook-blocked")
	p, err := e.Prepare(objs(t, hookJob("patch", `helm.sh/hook: post-install`, "x"), cm("app", "", "x")),
		ns, apply.Owner{Name: "bd", Revision: "r1", UID: "uid-1"})
	if err != nil {
		t.Fatal(err)
	}
	const why = `Error creating: pods "patch-" is forbidden: error looking up service account NS/admission: serviceaccount "admission" not found`
	var mu sync.Mutex
	var waits []apply.HookWait
	var warned time.Time // when the warning was written
	var reportedAfter time.Duration
	opts := apply.ApplyOptions{Hooks: apply.HooksInstall}
	opts.OnHookWait = func(w apply.HookWait) {
		mu.Lock()
		defer mu.Unlock()
		waits = append(waits, w)
		if w.Blocked != "" && reportedAfter == 0 {
			reportedAfter = time.Since(warned)
		}
		if len(waits) > 1 {
			return
		}
		// The first report: the Job is written; the Job controller
		// warns that it cannot create its Pods.
		job := &batchv1.Job{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "patch"}, job); err != nil {
			t.Errorf("reading the hook Job: %v", err)
			return
		}
		ev := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{GenerateName: "patch-", Namespace: ns},
			InvolvedObject: corev1.ObjectReference{Kind: "Job", APIVersion: "batch/v1", Namespace: ns, Name: "patch", UID: job.UID},
			Type:           corev1.EventTypeWarning, Reason: "FailedCreate", Message: strings.ReplaceAll(why, "NS", ns),
			FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1, Source: corev1.EventSource{Component: "job-controller"},
		}
		warned = time.Now()
		if err := env.Client.Create(ctx, ev); err != nil {
			t.Errorf("writing the warning: %v", err)
		}
	}
	_, err = e.Apply(ctx, p, opts)
	f := apply.As(err)
	wantWhy := "FailedCreate: " + strings.ReplaceAll(why, "NS", ns)
	if f == nil || f.Code != apply.CodeHookFailed || !strings.Contains(f.Message, "did not finish within 8s") || !strings.Contains(f.Message, "it could not run: "+wantWhy) {
		t.Fatalf("err = %v, want HookFailed naming the FailedCreate warning", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(waits) != 2 || waits[0].Blocked != "" || waits[1].Blocked != wantWhy {
		t.Fatalf("reported waits %+v, want one without a cause, then one blocked by %q", waits, wantWhy)
	}
	w := waits[1]
	if w.Phase != "post-install" || w.ID.Name != "patch" || w.Deadline.IsZero() {
		t.Errorf("reported wait %+v: want the post-install hook patch with a deadline", w)
	}
	if reportedAfter > 5*time.Second {
		t.Errorf("the blocked hook was reported %s after the warning, want within seconds", reportedAfter)
	}
}
