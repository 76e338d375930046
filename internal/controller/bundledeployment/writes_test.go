//go:build integration

package bundledeployment_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/history"
	"github.com/rukpak/rukpak/internal/ownership"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// writeCounter counts, by watching them from before the first write, the
// writes of a BundleDeployment and of its Bundles: every create and every
// update that changes the object (status patches included) is one watch
// event.
type writeCounter struct {
	mu      sync.Mutex
	counts  map[string]int // by "Kind name"
	stops   []func()
	started time.Time
}

// countWrites starts watching BundleDeployment name and the Bundles
// labelled for it.
func countWrites(t *testing.T, name string) *writeCounter {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	c := &writeCounter{counts: map[string]int{}, started: time.Now()}
	ctx := context.Background()
	watches := []struct {
		kind string
		list client.ObjectList
		opts client.ListOption
	}{
		{v1alpha2.BundleDeploymentKind, &v1alpha2.BundleDeploymentList{}, client.MatchingFields{"metadata.name": name}},
		{v1alpha2.BundleKind, &v1alpha2.BundleList{}, client.MatchingLabels{v1alpha2.LabelBundleDeployment: name}},
	}
	for _, w := range watches {
		// From what exists now: a watch from no version starts with an
		// ADDED event for every object that exists.
		if err := wc.List(ctx, w.list, w.opts); err != nil {
			t.Fatalf("listing %ss: %v", w.kind, err)
		}
		from := &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: w.list.GetResourceVersion()}}
		wi, err := wc.Watch(ctx, w.list, w.opts, from)
		if err != nil {
			t.Fatalf("watching %ss: %v", w.kind, err)
		}
		c.stops = append(c.stops, wi.Stop)
		go func() {
			for ev := range wi.ResultChan() {
				obj, ok := ev.Object.(client.Object)
				if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) {
					continue
				}
				c.mu.Lock()
				c.counts[w.kind+" "+obj.GetName()]++
				c.mu.Unlock()

			}
		}()
	}
	t.Cleanup(c.stop)
	return c
}

func (c *writeCounter) stop() {
	for _, s := range c.stops {
		s()
	}
	c.stops = nil
}

// settle waits until no write was seen for quiet, and returns the counts.
func (c *writeCounter) settle(t *testing.T, quiet time.Duration) map[string]int {
	t.Helper()
	last := c.snapshot()
	for {
		time.Sleep(quiet)
		now := c.snapshot()
		if fmt.Sprint(now) == fmt.Sprint(last) {
			return now
		}
		last = now
	}
}

func (c *writeCounter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

// total is the number of writes counted.
func total(counts map[string]int) int {
	n := 0
	for _, v := range counts {
		n += v
	}
	return n
}

// An install costs three writes of custom resources: the
// BundleDeployment's create, its Bundle's (born complete: what it unpacked
// to is in spec.unpacked, its number in a label) and one status patch of
// the BundleDeployment; the Bundle's status is not written (before issue
// 27 it was, with the unpack result and the outcome: four writes). history
// reads the revision as Healthy, installed when it was created. An upgrade
// writes the new revision's Bundle, the BundleDeployment's status, and the
// replaced revision's status once (Healthy, and when it was installed,
// which history no longer reads from the BundleDeployment's status).
func TestInstallWritesThreeCustomResources(t *testing.T) {
	ctx := context.Background()
	name := envtest.UniqueName("writes")
	ns := envtest.UniqueName("writes")
	writes := countWrites(t, name)
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     ns,
			Sources:              source(manifests(t, map[string]string{"a.yaml": cmYAML("a", "1"), "b.yaml": cmYAML("b", "2")})),
		},
	}
	if err := env.Client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, name, v1alpha2.TypeHealthy, metav1.ConditionTrue, v1alpha2.ReasonHealthy)
	counts := writes.settle(t, 3*time.Second)
	bd = waitCondition(t, name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	first := bd.Status.ActiveBundle
	want := map[string]int{"BundleDeployment " + name: 2, "Bundle " + first: 1}
	t.Logf("install: %d writes of custom resources: %v", total(counts), counts)
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Fatalf("install wrote %v, want %v (the BundleDeployment's create and status, the Bundle's create)", counts, want)
	}

	b := &v1alpha2.Bundle{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: first}, b); err != nil {
		t.Fatal(err)
	}
	if u := b.Spec.Unpacked; u == nil || !strings.HasPrefix(u.ContentDigest, "sha256:") || u.ObjectCount != 2 {
		t.Fatalf("spec.unpacked = %+v, want the content digest and 2 objects", u)
	}
	if b.UnpackPhase() != v1alpha2.BundlePhaseUnpacked || b.ObjectCount() != 2 || len(b.ResolvedSources()) != 1 {
		t.Fatalf("phase %q, %d objects, resolved %v: want Unpacked, 2 objects, the pinned source", b.UnpackPhase(), b.ObjectCount(), b.ResolvedSources())
	}
	if n := ownership.RevisionNumber(b); n != 1 {
		t.Fatalf("revision number = %d, want 1", n)
	}
	if got := history.Outcome(bd, b); got != v1alpha2.OutcomeHealthy {
		t.Fatalf("outcome = %q, want Healthy", got)
	}
	if at := history.InstalledAt(bd, b); at == nil || !at.Equal(&b.CreationTimestamp) {
		t.Fatalf("installed at %v, want the creation time %v", at, b.CreationTimestamp)
	}

	// An upgrade.
	writes.stop()
	writes = countWrites(t, name)
	updateBD(t, name, func(bd *v1alpha2.BundleDeployment) {
		bd.Spec.Sources = source(manifests(t, map[string]string{"a.yaml": cmYAML("a", "1")}))
	})
	envtest.Eventually(t, 30*time.Second, func() error {
		got := &v1alpha2.BundleDeployment{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, got); err != nil {
			return err
		}
		if got.Status.LastHealthyBundle == first || got.Status.LastHealthyBundle == "" {
			return fmt.Errorf("last healthy %q", got.Status.LastHealthyBundle)
		}
		return nil
	})
	counts = writes.settle(t, 3*time.Second)
	bd = waitCondition(t, name, v1alpha2.TypeHealthy, metav1.ConditionTrue, v1alpha2.ReasonHealthy)
	second := bd.Status.ActiveBundle
	want = map[string]int{"BundleDeployment " + name: 2, "Bundle " + second: 1, "Bundle " + first: 1}
	t.Logf("upgrade: %d writes of custom resources: %v", total(counts), counts)
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Fatalf("upgrade wrote %v, want %v (the BundleDeployment's update and status, the new Bundle's create, the replaced one's status)", counts, want)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: first}, b); err != nil {
		t.Fatal(err)
	}
	if b.Status.Outcome != v1alpha2.OutcomeHealthy || b.Status.InstalledAt == nil || !b.Status.InstalledAt.Equal(&b.CreationTimestamp) {
		t.Fatalf("replaced revision: outcome %q installed at %v, want Healthy written, installed at its creation %v", b.Status.Outcome, b.Status.InstalledAt, b.CreationTimestamp)
	}
	nb := &v1alpha2.Bundle{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: second}, nb); err != nil {
		t.Fatal(err)
	}
	if n := ownership.RevisionNumber(nb); n != 2 {
		t.Fatalf("revision number of the upgrade = %d, want 2", n)
	}
}
