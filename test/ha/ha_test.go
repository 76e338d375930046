package ha

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/contentserver"
	"github.com/rukpak/rukpak/pkg/envtest"
	"github.com/rukpak/rukpak/test/internal/follow"
	"github.com/rukpak/rukpak/test/internal/managerproc"
)

var env *envtest.Env

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard()) // the test's clients log nothing worth reading
	envtest.Run(m, &env)
}

const (
	// bundleDeployments are upgraded at once.
	bundleDeployments = 100
	// takeover is how soon the surviving replica must lead.
	takeover = 15 * time.Second
	// lease is the leader-election lease.
	lease = "rukpak-manager"
)

// replica is one manager process and its content server.
type replica struct {
	name    string
	proc    *managerproc.Proc
	content string
}

// revisionSource writes revision rev's manifests (four ConfigMaps every
// revision has, with value rev, and one only it has) into an immutable
// ConfigMap and returns the source and the objects it installs.
func revisionSource(t *testing.T, rev string) ([]v1alpha2.BundleSource, map[string]string) {
	t.Helper()
	want := map[string]string{"only-" + rev: rev}
	for _, n := range []string{"a", "b", "c", "d"} {
		want["common-"+n] = rev
	}
	files := map[string]string{}
	for name, value := range want {
		files[name+".yaml"] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  value: %q\n", name, value)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("ha-" + rev), Namespace: v1alpha2.SystemNamespace},
		Immutable:  ptr.To(true),
		Data:       files,
	}
	if err := env.Client.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	return []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeConfigMaps,
		ConfigMaps: []v1alpha2.ConfigMapSource{{ConfigMap: v1alpha2.LocalObjectReference{Name: cm.Name}, Path: "manifests"}}}}, want
}

// holder returns the lease's holder, "" if none.
func holder(ctx context.Context) string {
	l := &coordinationv1.Lease{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: v1alpha2.SystemNamespace, Name: lease}, l); err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// leading returns the replica whose log says it acquired the lease.
func leading(t *testing.T, rs []*replica) *replica {
	t.Helper()
	var found *replica
	envtest.Eventually(t, 30*time.Second, func() error {
		for _, r := range rs {
			data, err := os.ReadFile(r.proc.Log)
			if err != nil {
				return err
			}
			if !r.proc.Exited() && strings.Contains(strings.ToLower(string(data)), "successfully acquired lease") {
				found = r
				return nil
			}
		}
		return fmt.Errorf("no replica leads yet")
	})
	return found
}

// objectEvents counts, per namespace/name, the writes a watch sees to
// ConfigMaps rukpak manages: creations, deletions and changes of data.
// ended says why the watch stopped before the test ended, if it did.
type objectEvents struct {
	mu                        sync.Mutex
	added, deleted, dataWrite map[string]int
	ended                     func() error
}

// watchObjects counts the writes to rukpak's ConfigMaps from now on.
func watchObjects(t *testing.T) *objectEvents {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ev := &objectEvents{added: map[string]int{}, deleted: map[string]int{}, dataWrite: map[string]int{}}
	data := map[string]string{}
	list := &corev1.ConfigMapList{}
	ev.mu.Lock() // data is seeded from list once Watch returns
	defer ev.mu.Unlock()
	ev.ended = follow.Watch(t, wc, list, func(e watch.Event) {
		cm, ok := e.Object.(*corev1.ConfigMap)
		if !ok {
			return
		}
		key := cm.Namespace + "/" + cm.Name
		ev.mu.Lock()
		defer ev.mu.Unlock()
		switch e.Type {
		case watch.Added:
			ev.added[key]++
		case watch.Deleted:
			ev.deleted[key]++
		case watch.Modified:
			if data[key] != cm.Data["value"] {
				ev.dataWrite[key]++
			}
		}
		data[key] = cm.Data["value"]
	}, client.MatchingLabels{v1alpha2.LabelOwnerKind: v1alpha2.BundleDeploymentKind})
	for _, cm := range list.Items {
		data[cm.Namespace+"/"+cm.Name] = cm.Data["value"]
	}
	return ev
}

// TestLeaderKilledDuringUpgrade: two replicas; all 100 BundleDeployments
// are upgraded and the leader is killed while the upgrade is under way.
// The other replica leads within 15 s and finishes: every
// BundleDeployment converges to the new revision, the objects the old one
// alone had are pruned, no object is left without its BundleDeployment,
// and each object was written once for the upgrade (created, changed or
// deleted exactly once: no revision applied twice). Before that, both
// replicas' content servers serve a Bundle's content (the follower
// unpacks it on demand).
func TestLeaderKilledDuringUpgrade(t *testing.T) {
	ctx := context.Background()
	h := managerproc.New(t, env.Config)
	var rs []*replica
	for _, name := range []string{"a", "b"} {
		port := managerproc.FreePort(t)
		base := "http://127.0.0.1:" + strconv.Itoa(port)
		p := h.Start(name, "--leader-elect", "--content-bind-address=127.0.0.1:"+strconv.Itoa(port), "--content-url="+base)
		rs = append(rs, &replica{name: name, proc: p, content: base})
	}
	leader := leading(t, rs)

	v1, wantV1 := revisionSource(t, "v1")
	names := make([]string, bundleDeployments)
	for i := range names {
		names[i] = envtest.UniqueName(fmt.Sprintf("ha-%03d", i))
		bd := &v1alpha2.BundleDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: names[i]},
			Spec:       v1alpha2.BundleDeploymentSpec{ProvisionerClassName: v1alpha2.ClassPlain, InstallNamespace: names[i], Sources: v1},
		}
		if err := env.Client.Create(ctx, bd); err != nil {
			t.Fatal(err)
		}
	}
	converged(t, names, wantV1, 3*time.Minute)
	checkContentServers(t, names[0], rs)

	events := watchObjects(t)
	v2, wantV2 := revisionSource(t, "v2")
	// The leader dies with the upgrade under way: some BundleDeployments
	// upgraded, some being upgraded, and half of them not yet told.
	for _, name := range names[:bundleDeployments/2] {
		update(t, name, func(bd *v1alpha2.BundleDeployment) { bd.Spec.Sources = v2 })
	}
	var upgraded int
	envtest.Eventually(t, 60*time.Second, func() error {
		list := &corev1.ConfigMapList{}
		if err := env.Client.List(ctx, list, client.MatchingLabels{v1alpha2.LabelOwnerKind: v1alpha2.BundleDeploymentKind}); err != nil {
			return err
		}
		upgraded = 0
		for _, cm := range list.Items {
			if cm.Name == "only-v2" && slices.Contains(names, cm.Namespace) {
				upgraded++
			}
		}
		if upgraded < 5 {
			return fmt.Errorf("%d BundleDeployments upgraded", upgraded)
		}
		return nil
	})
	old := holder(ctx)
	leader.proc.Kill()
	killed := time.Now()
	t.Logf("killed leader %s (%s) with %d of %d BundleDeployments upgraded", leader.name, old, upgraded, bundleDeployments)
	for _, name := range names[bundleDeployments/2:] {
		update(t, name, func(bd *v1alpha2.BundleDeployment) { bd.Spec.Sources = v2 })
	}

	var next string
	envtest.Eventually(t, 3*takeover, func() error {
		if next = holder(ctx); next == "" || next == old {
			return fmt.Errorf("the lease is still %q's", old)
		}
		return nil
	})
	took := time.Since(killed)
	t.Logf("%s leads %s after the kill", next, took.Round(100*time.Millisecond))
	if took > takeover {
		t.Errorf("the other replica took over after %s, want at most %s", took, takeover)
	}

	converged(t, names, wantV2, 3*time.Minute)
	noOrphans(t, names, wantV2)
	// The watch may deliver the last events a moment after the objects
	// read as converged; counts only grow, so one written twice never
	// comes back to once.
	envtest.Eventually(t, 30*time.Second, func() error { return events.onceEach(names, wantV1) })
}

// onceEach checks that every object of the BundleDeployments names was
// written exactly once for the upgrade from revision v1 (whose objects are
// wantV1) to v2: only-v1 deleted, only-v2 created, the others changed.
func (ev *objectEvents) onceEach(names []string, wantV1 map[string]string) error {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if err := ev.ended(); err != nil {
		return fmt.Errorf("cannot count the upgrade's writes: %w", err)
	}
	var twice []string
	for _, ns := range names {
		for name := range wantV1 {
			key := ns + "/" + name
			switch {
			case name == "only-v1" && (ev.deleted[key] != 1 || ev.added[key] != 0):
				twice = append(twice, fmt.Sprintf("%s: deleted %d, created %d times", key, ev.deleted[key], ev.added[key]))
			case name != "only-v1" && (ev.dataWrite[key] != 1 || ev.added[key] != 0 || ev.deleted[key] != 0):
				twice = append(twice, fmt.Sprintf("%s: changed %d, created %d, deleted %d times", key, ev.dataWrite[key], ev.added[key], ev.deleted[key]))
			}
		}
		if key := ns + "/only-v2"; ev.added[key] != 1 || ev.deleted[key] != 0 || ev.dataWrite[key] != 0 {
			twice = append(twice, fmt.Sprintf("%s: created %d, deleted %d, changed %d times", key, ev.added[key], ev.deleted[key], ev.dataWrite[key]))
		}
	}
	if len(twice) > 0 {
		return fmt.Errorf("%d object(s) not written exactly once for the upgrade, e.g. %s", len(twice), strings.Join(twice[:min(5, len(twice))], "; "))
	}
	return nil
}

func update(t *testing.T, name string, mutate func(*v1alpha2.BundleDeployment)) {
	t.Helper()
	envtest.Eventually(t, 10*time.Second, func() error {
		bd := &v1alpha2.BundleDeployment{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
			return err
		}
		mutate(bd)
		return env.Client.Update(context.Background(), bd)
	})
}

// converged waits until every BundleDeployment reports its generation
// Installed and its namespace holds exactly want.
func converged(t *testing.T, names []string, want map[string]string, timeout time.Duration) {
	t.Helper()
	ctx := context.Background()
	envtest.Eventually(t, timeout, func() error {
		pending := 0
		var example string
		for _, name := range names {
			bd := &v1alpha2.BundleDeployment{}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
				return err
			}
			c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled)
			if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != bd.Generation {
				pending++
				example = fmt.Sprintf("%s: Installed %+v", name, c)
				continue
			}
			list := &corev1.ConfigMapList{}
			if err := env.Client.List(ctx, list, client.InNamespace(name), client.MatchingLabels{v1alpha2.LabelOwnerName: name}); err != nil {
				return err
			}
			got := map[string]string{}
			for _, cm := range list.Items {
				got[cm.Name] = cm.Data["value"]
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				pending++
				example = fmt.Sprintf("%s holds %v, want %v", name, got, want)
			}
		}
		if pending > 0 {
			return fmt.Errorf("%d of %d BundleDeployments not converged, e.g. %s", pending, len(names), example)
		}
		return nil
	})
}

// noOrphans checks that every ConfigMap labelled for a BundleDeployment
// belongs to one of names, in its namespace, and is one of want.
func noOrphans(t *testing.T, names []string, want map[string]string) {
	t.Helper()
	ours := map[string]bool{}
	for _, n := range names {
		ours[n] = true
	}
	list := &corev1.ConfigMapList{}
	if err := env.Client.List(context.Background(), list, client.MatchingLabels{v1alpha2.LabelOwnerKind: v1alpha2.BundleDeploymentKind}); err != nil {
		t.Fatal(err)
	}
	for _, cm := range list.Items {
		owner := cm.Labels[v1alpha2.LabelOwnerName]
		if !ours[owner] || owner != cm.Namespace {
			continue // another test's
		}
		if _, ok := want[cm.Name]; !ok {
			t.Errorf("ConfigMap %s/%s is left over", cm.Namespace, cm.Name)
		}
	}
}

// checkContentServers reads Bundle content from every replica's content
// server, as a ServiceAccount allowed to: each answers with the same tree.
func checkContentServers(t *testing.T, bdName string, rs []*replica) {
	t.Helper()
	ctx := context.Background()
	bd := &v1alpha2.BundleDeployment{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: bdName}, bd); err != nil {
		t.Fatal(err)
	}
	bundle := bd.Status.ActiveBundle
	ns := envtest.UniqueName("reader")
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: ns}}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{"bundles/" + contentserver.Subresource}, Verbs: []string{"get"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ns},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: ns}}}
	for _, o := range []client.Object{sa, role, binding} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := kubernetes.NewForConfigOrDie(env.Config).CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{contentserver.Audience}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	digests := map[string]string{}
	for _, r := range rs {
		envtest.Eventually(t, 30*time.Second, func() error {
			req, err := http.NewRequest(http.MethodGet, contentserver.URL(r.content, bundle), nil)
			if err != nil {
				return err
			}
			req.Header.Set("Authorization", "Bearer "+tr.Status.Token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || len(body) == 0 {
				return fmt.Errorf("replica %s: %s: %s", r.name, resp.Status, body)
			}
			digests[r.name] = resp.Header.Get("Docker-Content-Digest")
			return nil
		})
	}
	if digests["a"] == "" || digests["a"] != digests["b"] {
		t.Fatalf("the replicas serve different trees for %s: %v", bundle, digests)
	}
}
