package crash

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
	"github.com/rukpak/rukpak/test/internal/managerproc"
)

// runs is how many upgrades are interrupted.
const runs = 20

var env *envtest.Env

func TestMain(m *testing.M) { envtest.Run(m, &env) }

// perRevision is how many objects only one revision has: enough that a
// kill often lands in the middle of applying or pruning them.
const perRevision = 10

// revision creates the manifests of revision i: a ConfigMap every
// revision has (with value i) and perRevision only revision i has.
func revision(t *testing.T, i int) (source []v1alpha2.BundleSource, want map[string]string) {
	t.Helper()
	want = map[string]string{"common": strconv.Itoa(i)}
	for j := 0; j < perRevision; j++ {
		want[fmt.Sprintf("rev-%d-%d", i, j)] = strconv.Itoa(j)
	}
	files := map[string]string{}
	for name, value := range want {
		files[name+".yaml"] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  value: %q\n", name, value)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("crash"), Namespace: v1alpha2.SystemNamespace},
		Immutable:  ptr.To(true),
		Data:       files,
	}
	if err := env.Client.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	return []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeConfigMaps,
		ConfigMaps: []v1alpha2.ConfigMapSource{{ConfigMap: v1alpha2.LocalObjectReference{Name: cm.Name}, Path: "manifests"}}}}, want
}

// TestKillDuringUpgrades upgrades one BundleDeployment 20 times, each time
// killing the manager with SIGKILL after a random delay (from before the
// new revision is seen to after it is installed) and starting a new one.
// Every run must converge to the new revision, healthy, with exactly its
// objects in the namespace: nothing of earlier revisions left behind.
func TestKillDuringUpgrades(t *testing.T) {
	ctx := context.Background()
	h := managerproc.New(t, env.Config)
	store := "--storage-dir=" + filepath.Join(h.Dir, "store") // the same across restarts
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	t.Logf("random seed %d", seed)

	ns := envtest.UniqueName("crash")
	src, want := revision(t, 0)
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("bd")},
		Spec:       v1alpha2.BundleDeploymentSpec{ProvisionerClassName: v1alpha2.ClassPlain, InstallNamespace: ns, Sources: src},
	}
	if err := env.Client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	mgr := h.Start("manager", store)
	converged(t, bd.Name, ns, want)
	stages := map[string]int{}
	defer func() { t.Logf("where the kills landed: %v", stages) }()

	for i := 1; i <= runs; i++ {
		src, want = revision(t, i)
		update(t, bd.Name, func(b *v1alpha2.BundleDeployment) { b.Spec.Sources = src })
		// Mostly within the first 300ms (resolve, unpack, apply, prune),
		// sometimes later (after the install, during health).
		delay := time.Duration(rng.IntN(300)) * time.Millisecond
		if rng.IntN(4) == 0 {
			delay = time.Duration(300+rng.IntN(1200)) * time.Millisecond
		}
		time.Sleep(delay)
		mgr.Kill()
		stage := stageAt(t, ns, i)
		stages[stage]++
		mgr = h.Start("manager", store)
		t.Logf("run %d: killed after %s, %s", i, delay, stage)
		converged(t, bd.Name, ns, want)
	}
}

// stageAt tells how far the upgrade to revision i got when the manager
// died, from what the namespace holds.
func stageAt(t *testing.T, ns string, i int) string {
	t.Helper()
	list := &corev1.ConfigMapList{}
	if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	newObjs, oldObjs := 0, 0
	prefix := fmt.Sprintf("rev-%d-", i)
	for _, cm := range list.Items {
		switch {
		case len(cm.Name) > len(prefix) && cm.Name[:len(prefix)] == prefix:
			newObjs++
		case len(cm.Name) > 4 && cm.Name[:4] == "rev-":
			oldObjs++
		}
	}
	switch {
	case newObjs == 0:
		return "before apply"
	case newObjs < perRevision:
		return "during apply"
	case oldObjs > 0:
		return "before prune finished"
	}
	return "after install"
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

// converged waits until the BundleDeployment reports its newest generation
// installed and healthy as the only revision of note, and the namespace
// holds exactly want's ConfigMaps with want's values.
func converged(t *testing.T, name, ns string, want map[string]string) {
	t.Helper()
	envtest.Eventually(t, 60*time.Second, func() error {
		bd := &v1alpha2.BundleDeployment{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
			return err
		}
		for _, typ := range []string{v1alpha2.TypeInstalled, v1alpha2.TypeHealthy} {
			c := meta.FindStatusCondition(bd.Status.Conditions, typ)
			if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != bd.Generation {
				return fmt.Errorf("%s = %+v at generation %d", typ, c, bd.Generation)
			}
		}
		if bd.Status.ActiveBundle == "" || bd.Status.ActiveBundle != bd.Status.LastHealthyBundle || bd.Status.FailedBundle != "" {
			return fmt.Errorf("active %q, last healthy %q, failed %q", bd.Status.ActiveBundle, bd.Status.LastHealthyBundle, bd.Status.FailedBundle)
		}
		list := &corev1.ConfigMapList{}
		if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return err
		}
		got := map[string]string{}
		for _, cm := range list.Items {
			if cm.Name == "kube-root-ca.crt" {
				continue
			}
			if cm.Labels[v1alpha2.LabelOwnerName] != name {
				return fmt.Errorf("ConfigMap %s is not labelled as owned by %s", cm.Name, name)
			}
			got[cm.Name] = cm.Data["value"]
		}
		if !equal(got, want) {
			return fmt.Errorf("ConfigMaps %v, want exactly %v", keys(got), keys(want))
		}
		return nil
	})
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return slices.Clip(out)
}

// TestKillDuringFirstInstall creates a BundleDeployment, kills the manager
// with SIGKILL within 60ms (while it resolves, unpacks and applies the
// first revision, which records its inventory only when done; a warm
// manager installs 11 ConfigMaps in about 30ms),
// changes the spec to another revision while no manager runs, and starts a
// new one: it must converge to the second revision with nothing of the
// first left behind, whatever the first install had written.
func TestKillDuringFirstInstall(t *testing.T) {
	ctx := context.Background()
	h := managerproc.New(t, env.Config)
	store := "--storage-dir=" + filepath.Join(h.Dir, "store")
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	t.Logf("random seed %d", seed)
	mgr := h.Start("manager", store)
	stages := map[string]int{}
	defer func() { t.Logf("where the kills landed: %v", stages) }()

	for i := 1; i <= firstInstallRuns; i++ {
		ns := envtest.UniqueName("first")
		first, _ := revision(t, 0)
		second, want := revision(t, 1)
		bd := &v1alpha2.BundleDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("bd")},
			Spec:       v1alpha2.BundleDeploymentSpec{ProvisionerClassName: v1alpha2.ClassPlain, InstallNamespace: ns, Sources: first},
		}
		if err := env.Client.Create(ctx, bd); err != nil {
			t.Fatal(err)
		}
		delay := time.Duration(rng.IntN(60)) * time.Millisecond
		time.Sleep(delay)
		mgr.Kill()
		stage := stageAt(t, ns, 0)
		stages[stage]++
		update(t, bd.Name, func(b *v1alpha2.BundleDeployment) { b.Spec.Sources = second })
		mgr = h.Start("manager", store)
		t.Logf("run %d: killed after %s, %s", i, delay, stage)
		converged(t, bd.Name, ns, want)
	}
}

// firstInstallRuns is how many first installs TestKillDuringFirstInstall
// interrupts.
const firstInstallRuns = 12
