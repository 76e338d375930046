package shards

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/shard"
	"github.com/rukpak/rukpak/pkg/envtest"
	"github.com/rukpak/rukpak/test/internal/managerproc"
)

var (
	env      *envtest.Env
	auditLog string
)

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	dir, err := os.MkdirTemp("", "rukpak-shards-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	auditLog = filepath.Join(dir, "audit.log")
	env, err = envtest.StartWith(envtest.Options{AuditLog: auditLog})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping envtest:", err)
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

const (
	// bundleDeployments are spread over the four managers (issue 41's
	// figure): 75 each.
	bundleDeployments = 300
	// managerUser is the user of every manager (as in the release
	// manifest, the shards share one ServiceAccount: each trusts the
	// Bundles the others wrote); the audit log tells them apart by
	// their user agent.
	managerUser = "rukpak-shards"
	// unsharded is the name of the manager without --shard.
	unsharded = "unsharded"
)

// shards are the managers' shards; "" is the unsharded one.
var shards = []string{"", "a", "b", "c"}

func userOf(s string) string { return cmpOr(s, unsharded) }

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// startManagers starts one manager per shard, as managerUser, and a
// standby of shard a once its first manager leads.
func startManagers(t *testing.T) (procs map[string]*managerproc.Proc, standby *managerproc.Proc) {
	t.Helper()
	h := managerproc.New(t, env.Config)
	cfg, err := env.AddUser(managerUser, "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := h.KubeconfigFor(managerUser, cfg)
	args := func(s string) []string {
		a := []string{"--kubeconfig=" + kubeconfig, "--leader-elect"}
		if s != "" {
			a = append(a, "--shard="+s)
		}
		return a
	}
	procs = map[string]*managerproc.Proc{}
	for _, s := range shards {
		procs[s] = h.Start(cmpOr(s, unsharded), args(s)...)
	}
	envtest.Eventually(t, 30*time.Second, func() error {
		data, err := os.ReadFile(procs["a"].Log)
		if err != nil {
			return err
		}
		if !strings.Contains(strings.ToLower(string(data)), "successfully acquired lease") {
			return fmt.Errorf("shard a's manager does not lead yet")
		}
		return nil
	})
	return procs, h.Start("a-standby", args("a")...)
}

// holder returns the holder of the Lease name in rukpak-system.
func holder(t *testing.T, name string) string {
	t.Helper()
	l := &coordinationv1.Lease{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: v1alpha2.SystemNamespace, Name: name}, l); err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// restored deletes the object "one" of each BundleDeployment of names
// and returns how long each took to come back (at most timeout).
func restored(t *testing.T, names []string, timeout time.Duration) map[string]time.Duration {
	t.Helper()
	ctx := context.Background()
	deleted := time.Now()
	for _, n := range names {
		if err := env.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: "one"}}); err != nil {
			t.Fatal(err)
		}
	}
	took := map[string]time.Duration{}
	envtest.Eventually(t, timeout, func() error {
		for _, n := range names {
			if _, ok := took[n]; ok {
				continue
			}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: n, Name: "one"}, &corev1.ConfigMap{}); err == nil {
				took[n] = time.Since(deleted)
			}
		}
		if len(took) < len(names) {
			return fmt.Errorf("%d of %d objects restored", len(took), len(names))
		}
		return nil
	})
	return took
}

// source writes a bundle of two ConfigMaps into an immutable ConfigMap.
func source(t *testing.T) []v1alpha2.BundleSource {
	t.Helper()
	files := map[string]string{}
	for _, n := range []string{"one", "two"} {
		files[n+".yaml"] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  value: %q\n", n, n)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("shards-src"), Namespace: v1alpha2.SystemNamespace},
		Immutable:  ptr.To(true),
		Data:       files,
	}
	if err := env.Client.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	return []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeConfigMaps,
		ConfigMaps: []v1alpha2.ConfigMapSource{{ConfigMap: v1alpha2.LocalObjectReference{Name: cm.Name}, Path: "manifests"}}}}
}

// create creates a BundleDeployment installing src into a namespace of
// its name, labelled for shard s ("" none).
func create(t *testing.T, prefix, s string, src []v1alpha2.BundleSource) string {
	t.Helper()
	name := envtest.UniqueName(prefix)
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha2.BundleDeploymentSpec{ProvisionerClassName: v1alpha2.ClassPlain, InstallNamespace: name, Sources: src},
	}
	if s != "" {
		bd.Labels = map[string]string{v1alpha2.LabelShard: s}
	}
	if err := env.Client.Create(context.Background(), bd); err != nil {
		t.Fatal(err)
	}
	return name
}

// installed waits until every BundleDeployment of names reports its
// generation Installed.
func installed(t *testing.T, names []string, timeout time.Duration) {
	t.Helper()
	envtest.Eventually(t, timeout, func() error {
		var pending []string
		for _, name := range names {
			bd := &v1alpha2.BundleDeployment{}
			if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
				return err
			}
			c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled)
			if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != bd.Generation {
				pending = append(pending, name)
			}
		}
		if len(pending) > 0 {
			return fmt.Errorf("%d of %d not installed yet, e.g. %s", len(pending), len(names), pending[0])
		}
		return nil
	})
}

// owner returns the BundleDeployment of names that a write is about
// (its objects in its namespace, itself, its Bundles), "" for none.
func owner(e auditEvent, names []string) string {
	for _, n := range names {
		switch {
		case e.ObjectRef.Namespace == n && e.ObjectRef.Resource != "events",
			e.ObjectRef.Resource == "namespaces" && e.ObjectRef.Name == n,
			e.ObjectRef.Resource == "bundledeployments" && e.ObjectRef.Name == n,
			e.ObjectRef.Resource == "bundles" && strings.HasPrefix(e.ObjectRef.Name, n+"-"):
			return n
		}
	}
	return ""
}

// writers returns, per BundleDeployment of names, who wrote what of it
// from offset on.
func writers(t *testing.T, offset int64, names []string) map[string]map[string][]string {
	t.Helper()
	by := map[string]map[string][]string{}
	for _, e := range managerWrites(t, offset) {
		n := owner(e, names)
		if n == "" {
			continue
		}
		if by[n] == nil {
			by[n] = map[string][]string{}
		}
		by[n][e.manager()] = append(by[n][e.manager()], e.String())
	}
	return by
}

// resourceVersions returns the resourceVersion of each object rukpak
// manages in namespace ns.
func resourceVersions(t *testing.T, ns string) map[string]string {
	t.Helper()
	list := &corev1.ConfigMapList{}
	if err := env.Client.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{v1alpha2.LabelOwnerKind: v1alpha2.BundleDeploymentKind}); err != nil {
		t.Fatal(err)
	}
	rvs := map[string]string{}
	for _, cm := range list.Items {
		rvs[cm.Name] = cm.ResourceVersion
	}
	return rvs
}

// relabel sets (or, for "", removes) name's shard label.
func relabel(t *testing.T, name, s string) {
	t.Helper()
	envtest.Eventually(t, 10*time.Second, func() error {
		bd := &v1alpha2.BundleDeployment{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
			return err
		}
		if bd.Labels == nil {
			bd.Labels = map[string]string{}
		}
		if s == "" {
			delete(bd.Labels, v1alpha2.LabelShard)
		} else {
			bd.Labels[v1alpha2.LabelShard] = s
		}
		return env.Client.Update(context.Background(), bd)
	})
}

// bundlesIn waits until every Bundle of name carries shard s's label.
func bundlesIn(t *testing.T, name, s string) {
	t.Helper()
	envtest.Eventually(t, 30*time.Second, func() error {
		list := &v1alpha2.BundleList{}
		if err := env.Client.List(context.Background(), list, client.MatchingLabels{v1alpha2.LabelBundleDeployment: name}); err != nil {
			return err
		}
		if len(list.Items) == 0 {
			return fmt.Errorf("%s has no Bundles", name)
		}
		for _, b := range list.Items {
			if got := b.Labels[v1alpha2.LabelShard]; got != s {
				return fmt.Errorf("Bundle %s is in shard %q, want %q", b.Name, got, s)
			}
		}
		return nil
	})
}

// TestShards: three shards and an unsharded manager; 300 BundleDeployments
// spread over them are installed, each written (objects, Bundles, status)
// by its own shard's manager alone. One moved from shard a to shard b by
// relabelling: no write to its objects (same resourceVersions, no write
// request in the audit log); its Bundles follow, and shard b, not a,
// corrects its drift; without the label, it moves to the unsharded
// manager the same way. SIGKILL of shard a's leader stops shard a's drift
// correction, not shard b's, until shard a's standby leads. One labelled with a shard no manager runs: the
// unsharded manager reports it (ShardAvailable=False, an event, nothing
// installed) until its label names shard c, which installs it.
func TestShards(t *testing.T) {
	ctx := context.Background()
	procs, _ := startManagers(t)
	// Each shard's leader announces it.
	envtest.Eventually(t, 30*time.Second, func() error {
		for _, s := range shards[1:] {
			l := &coordinationv1.Lease{}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: v1alpha2.SystemNamespace, Name: shard.LeaseName(s)}, l); err != nil {
				return err
			}
			if l.Labels[v1alpha2.LabelShard] != s {
				return fmt.Errorf("Lease %s is labelled %v", l.Name, l.Labels)
			}
		}
		return nil
	})
	src := source(t)
	start := auditSize(t)
	began := time.Now()
	names := make([]string, bundleDeployments)
	shardOf := map[string]string{}
	for i := range names {
		s := shards[i%len(shards)]
		names[i] = create(t, fmt.Sprintf("shards-%03d", i), s, src)
		shardOf[names[i]] = s
	}
	installed(t, names, 4*time.Minute)
	t.Logf("%d BundleDeployments over %d managers installed in %s", len(names), len(shards), time.Since(began).Round(100*time.Millisecond))

	// Each BundleDeployment is written by its shard's manager alone.
	var wrong []string
	for n, by := range writers(t, start, names) {
		for user, writes := range by {
			if user != userOf(shardOf[n]) {
				wrong = append(wrong, fmt.Sprintf("%s (shard %q) written by %s: %s", n, shardOf[n], user, strings.Join(writes[:min(3, len(writes))], "; ")))
			}
		}
	}
	if len(wrong) > 0 {
		sort.Strings(wrong)
		t.Fatalf("%d BundleDeployment(s) written by another shard's manager:\n%s", len(wrong), strings.Join(wrong[:min(10, len(wrong))], "\n"))
	}

	// Relabelling moves one from shard a to shard b, writing none of its
	// objects.
	moved := names[1]
	if shardOf[moved] != "a" {
		t.Fatalf("names[1] is in shard %q", shardOf[moved])
	}
	before := resourceVersions(t, moved)
	if len(before) != 2 {
		t.Fatalf("%s manages %d objects, want 2", moved, len(before))
	}
	relabelled := auditSize(t)
	relabel(t, moved, "b")
	bundlesIn(t, moved, "b")
	// The adopting shard reconciles it a moment after its Bundles moved.
	time.Sleep(5 * time.Second)
	if after := resourceVersions(t, moved); !maps(before, after) {
		t.Errorf("relabelling changed %s's objects: resourceVersions %v, then %v", moved, before, after)
	}
	var objectWrites, other []string
	for _, writes := range writers(t, relabelled, []string{moved})[moved] {
		for _, w := range writes {
			if strings.Contains(w, " configmaps "+moved+"/") || strings.Contains(w, " namespaces ") {
				objectWrites = append(objectWrites, w)
			} else {
				other = append(other, w)
			}
		}
	}
	t.Logf("writes after relabelling %s other than its objects: %d\n%s", moved, len(other), strings.Join(other, "\n"))
	if len(objectWrites) > 0 {
		t.Errorf("relabelling %s wrote %d of its objects:\n%s", moved, len(objectWrites), strings.Join(objectWrites, "\n"))
	}
	bd := &v1alpha2.BundleDeployment{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: moved}, bd); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("%s after the move: Installed %+v", moved, c)
	}

	// Shard b corrects its drift; shard a no longer does.
	drifted := auditSize(t)
	if err := env.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: moved, Name: "one"}}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 30*time.Second, func() error {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: moved, Name: "one"}, &corev1.ConfigMap{})
	})
	by := writers(t, drifted, []string{moved})[moved]
	if len(by[userOf("a")]) > 0 || len(by[userOf("b")]) == 0 {
		t.Errorf("the drift of %s (now shard b) was corrected by %v", moved, by)
	}

	// Removing the label moves it to the unsharded manager, again with
	// no write to its objects.
	before = resourceVersions(t, moved)
	unlabelled := auditSize(t)
	relabel(t, moved, "")
	bundlesIn(t, moved, "")
	time.Sleep(5 * time.Second)
	if after := resourceVersions(t, moved); !maps(before, after) {
		t.Errorf("unlabelling changed %s's objects: resourceVersions %v, then %v", moved, before, after)
	}
	for who, writes := range writers(t, unlabelled, []string{moved})[moved] {
		for _, w := range writes {
			if who != unsharded || !strings.Contains(w, " bundles ") {
				t.Errorf("unlabelling %s: %s", moved, w)
			}
		}
	}

	// A label naming no running shard is reported, nothing installed.
	lost := create(t, "shards-lost", "z", src)
	envtest.Eventually(t, 60*time.Second, func() error {
		bd := &v1alpha2.BundleDeployment{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: lost}, bd); err != nil {
			return err
		}
		c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeShardAvailable)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha2.ReasonShardNotRunning {
			return fmt.Errorf("%s: %s is %+v", lost, v1alpha2.TypeShardAvailable, c)
		}
		return nil
	})
	// The event is sent after the condition is written, by the
	// recorder's own goroutine: it is looked for until it comes.
	envtest.Eventually(t, 30*time.Second, func() error {
		events := &eventsv1.EventList{}
		if err := env.Client.List(ctx, events); err != nil {
			return err
		}
		if !slices.ContainsFunc(events.Items, func(e eventsv1.Event) bool {
			return e.Regarding.Name == lost && e.Reason == v1alpha2.ReasonShardNotRunning
		}) {
			return fmt.Errorf("no %s event about %s", v1alpha2.ReasonShardNotRunning, lost)
		}
		return nil
	})
	if rvs := resourceVersions(t, lost); len(rvs) > 0 {
		t.Errorf("%s, in no running shard, installed %v", lost, rvs)
	}
	for user, writes := range writers(t, start, []string{lost})[lost] {
		for _, w := range writes {
			if user != userOf("") || !strings.Contains(w, "bundledeployments/status") {
				t.Errorf("%s, in no running shard, written: %s", lost, w)
			}
		}
	}
	// SIGKILL of shard a's leader stops the drift correction of shard
	// a's BundleDeployments alone, until its standby leads.
	inA, inB := names[5], names[2]
	if shardOf[inA] != "a" || shardOf[inB] != "b" {
		t.Fatalf("names[5] is in shard %q, names[2] in %q", shardOf[inA], shardOf[inB])
	}
	leaseA := shard.LeaderElectionID("rukpak-manager", "a")
	was := holder(t, leaseA)
	procs["a"].Kill()
	killed := time.Now()
	took := restored(t, []string{inA, inB}, time.Minute)
	now := holder(t, leaseA)
	t.Logf("after the SIGKILL of shard a's leader: shard b restored its object in %s, shard a in %s (its lease held by %q, then %q)",
		took[inB].Round(100*time.Millisecond), took[inA].Round(100*time.Millisecond), was, now)
	if now == was {
		t.Errorf("shard a's standby does not lead %s after the kill", time.Since(killed).Round(time.Second))
	}
	if took[inB] > 10*time.Second {
		t.Errorf("shard b restored its object in %s, while shard a failed over", took[inB])
	}
	if took[inA] < took[inB] {
		t.Errorf("shard a restored its object (in %s) before shard b (in %s), with its leader killed", took[inA], took[inB])
	}

	relabel(t, lost, "c")
	installed(t, []string{lost}, time.Minute)
	envtest.Eventually(t, 10*time.Second, func() error {
		bd := &v1alpha2.BundleDeployment{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: lost}, bd); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeShardAvailable); c != nil {
			return fmt.Errorf("%s in shard c still has %+v", lost, c)
		}
		return nil
	})
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
