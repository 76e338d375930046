package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/sandbox"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// Attacks on what the manager shares among tenants (package tenant): the
// content store and the render slots. The suite runs the manager with
// --tenant-store-quota=64Mi (main_test.go) and the default render slots:
// 4 in all, 2 per tenant.

// tenantStoreQuota is the manager's --tenant-store-quota in the suite.
const tenantStoreQuota = "64Mi"

// renderSlots and tenantRenderSlots are the manager's default
// --render-concurrency and --tenant-render-concurrency.
const (
	renderSlots       = sandbox.DefaultConcurrency
	tenantRenderSlots = sandbox.DefaultConcurrency / 2
)

// paddedBundle is a plain bundle of one ConfigMap and a file of n random
// bytes outside manifests/ (stored, never rendered): content that passes
// every per-archive limit and fills the store.
func paddedBundle(t *testing.T, cm string, n int) []v1alpha2.BundleSource {
	t.Helper()
	pad := make([]byte, n)
	_, _ = rand.Read(pad)
	return serveArchive(t, tarGzOf(t,
		tarEntry{name: "manifests/cm.yaml", typ: tar.TypeReg, body: []byte(configMapYAML(cm, "x"))},
		tarEntry{name: "padding/blob", typ: tar.TypeReg, body: pad}))
}

// fillStore is the attack of issue 24: a team fills the shared content
// store from its own HTTP server with archives that each stay within every
// per-archive limit, so that another team's next revision does not fit.
// Its third 24 MiB revision is over its quota of 64 MiB and is refused
// naming the quota and the BundleDeployments that hold it; another team's
// one-ConfigMap revision installs.
func fillStore(t *testing.T, team *hostileTeam) func(*testing.T) {
	var held []string
	for i := range 2 {
		name := envtest.UniqueName("fill")
		team.create(t, team.bd(name, v1alpha2.ClassPlain, paddedBundle(t, "fill-"+strconv.Itoa(i), 24<<20)))
		waitInstalled(t, name)
		held = append(held, name)
	}
	over := envtest.UniqueName("fill")
	team.create(t, team.bd(over, v1alpha2.ClassPlain, paddedBundle(t, "fill-over", 24<<20)))
	return func(t *testing.T) {
		msg := waitUnpackFailed(t, over, v1alpha2.ReasonResourceLimit, time.Minute)
		for _, w := range []string{"tenant " + team.ns + "'s quota of 64 MiB in the content store is full",
			"of BundleDeployment " + held[0], "of BundleDeployment " + held[1], "the new content needs"} {
			if !strings.Contains(msg, w) {
				t.Fatalf("BundleDeployment %s: Unpacked message %q does not contain %q", over, msg, w)
			}
		}
		t.Logf("refused: %s", msg)
		// Another team's next revision, one ConfigMap, installs.
		other := newHostileTeam(t)
		name := envtest.UniqueName("other")
		other.create(t, other.bd(name, v1alpha2.ClassPlain, serveArchive(t, tarGzOf(t,
			tarEntry{name: "manifests/cm.yaml", typ: tar.TypeReg, body: []byte(configMapYAML("next", "installed"))}))))
		waitInstalled(t, name)
		if got := configMapValue(t, other.ns, "next"); got != "installed" {
			t.Fatalf("the other team's ConfigMap holds %q", got)
		}
	}
}

// slowChart is a chart whose one template loops a while before it renders
// a ConfigMap called name: its child lives long enough for children to
// overlap.
func slowChart(name string) map[string]string {
	return bombChart("slow", "{{- range $i := until 1500000 }}{{- end }}\n"+configMapYAML(name, "rendered"), "")
}

// childSample is what one look at the manager's children saw.
type childSample struct {
	all      int
	byTenant map[string]int
	rss      int64 // bytes resident, all children together
}

// sampleChildren looks at the manager's child processes (sandbox
// children, which name their tenant in their environment) every 2 ms
// until stop is called, which returns the most seen at once, in all and
// of one tenant, the peak of their resident memory together, and how many
// samples were taken.
func sampleChildren(t *testing.T, manager int) (stop func() (peak childSample, samples int)) {
	t.Helper()
	done := make(chan struct{})
	out := make(chan struct {
		peak    childSample
		samples int
	}, 1)
	go func() {
		peak := childSample{byTenant: map[string]int{}}
		n := 0
		for {
			select {
			case <-done:
				out <- struct {
					peak    childSample
					samples int
				}{peak, n}
				return
			default:
			}
			s := lookAtChildren(manager)
			n++
			peak.all, peak.rss = max(peak.all, s.all), max(peak.rss, s.rss)
			for tn, c := range s.byTenant {
				peak.byTenant[tn] = max(peak.byTenant[tn], c)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return func() (childSample, int) {
		close(done)
		r := <-out
		return r.peak, r.samples
	}
}

// lookAtChildren counts the children of pid that are sandbox children, by
// the tenant their environment names, and sums their resident memory.
func lookAtChildren(pid int) childSample {
	s := childSample{byTenant: map[string]int{}}
	des, err := os.ReadDir("/proc")
	if err != nil {
		return s
	}
	parent := strconv.Itoa(pid)
	for _, de := range des {
		if _, err := strconv.Atoi(de.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", de.Name(), "stat"))
		if err != nil {
			continue
		}
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 22 || fields[1] != parent {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", de.Name(), "environ"))
		if err != nil || !bytes.Contains(env, []byte("RUKPAK_SANDBOX_JOB=")) {
			continue
		}
		tn := "?"
		for _, kv := range bytes.Split(env, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte(sandbox.EnvTenant+"=")); ok {
				tn = string(v)
			}
		}
		s.all++
		s.byTenant[tn]++
		// Field 24 of stat (22 after the command) is the resident set in pages.
		if pages, err := strconv.ParseInt(fields[21], 10, 64); err == nil {
			s.rss += pages * int64(os.Getpagesize())
		}
	}
	return s
}

// renderEverything is the attack of issue 24 on the render slots: three
// teams' charts render at once, first installs, then, all at once, drift
// corrections of every one of them (their ConfigMaps edited), the same
// content installed again by BundleDeployments deleted and created again,
// and new ones. The manager's children, counted from /proc, never number
// more than the render slots, nor more than a tenant's share of one
// tenant.
func renderEverything(t *testing.T, team *hostileTeam) func(*testing.T) {
	teams := []*hostileTeam{team, newHostileTeam(t), newHostileTeam(t)}
	const each = 3
	type install struct {
		team *hostileTeam
		name string
		cm   string
		srcs []v1alpha2.BundleSource
	}
	var installs []install
	for _, tm := range teams {
		for i := range each {
			cm := "slow-" + strconv.Itoa(i)
			installs = append(installs, install{team: tm, name: envtest.UniqueName("slow"), cm: cm, srcs: treeSource(t, slowChart(cm))})
		}
	}
	stop := sampleChildren(t, currentManager(t).pid)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			stop()
		}
	})
	begin := time.Now()
	for _, in := range installs {
		in.team.create(t, in.team.bd(in.name, v1alpha2.ClassHelm, in.srcs))
	}
	return func(t *testing.T) {
		for _, in := range installs {
			waitInstalled(t, in.name)
		}
		firsts := time.Since(begin)
		// All at once: drift on the others, each team's first
		// BundleDeployment deleted and created again with the same
		// content, and a new one per team.
		var wg sync.WaitGroup
		for i, in := range installs {
			if i%each == 0 {
				// Deleted and created again: rendered again from content
				// that rendered before.
				wg.Go(func() {
					ctx := context.Background()
					if err := in.team.client.Delete(ctx, &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: in.name}}); err != nil {
						t.Error(err)
						return
					}
					envtest.Eventually(t, time.Minute, func() error {
						err := suite.client.Get(ctx, client.ObjectKey{Name: in.name}, &v1alpha2.BundleDeployment{})
						if err == nil {
							return fmt.Errorf("BundleDeployment %s is still there", in.name)
						}
						return client.IgnoreNotFound(err)
					})
					if err := in.team.client.Create(ctx, in.team.bd(in.name, v1alpha2.ClassHelm, in.srcs)); err != nil {
						t.Error(err)
					}
				})
				continue
			}
			// Drift: rendered again to correct it.
			wg.Go(func() {
				cm := &corev1.ConfigMap{}
				key := client.ObjectKey{Namespace: in.team.ns, Name: in.cm}
				if err := suite.client.Get(context.Background(), key, cm); err != nil {
					t.Error(err)
					return
				}
				cm.Data["value"] = "tampered"
				if err := suite.client.Update(context.Background(), cm); err != nil {
					t.Error(err)
				}
			})
		}
		var more []string
		for _, tm := range teams {
			name := envtest.UniqueName("slow")
			tm.create(t, tm.bd(name, v1alpha2.ClassHelm, treeSource(t, slowChart("slow-new"))))
			more = append(more, name)
		}
		wg.Wait()
		for _, in := range installs {
			waitInstalled(t, in.name)
			envtest.Eventually(t, time.Minute, func() error {
				cm := &corev1.ConfigMap{}
				if err := suite.client.Get(context.Background(), client.ObjectKey{Namespace: in.team.ns, Name: in.cm}, cm); err != nil {
					return err
				}
				if got := cm.Data["value"]; got != "rendered" {
					return fmt.Errorf("ConfigMap %s/%s holds %q: drift not corrected yet", in.team.ns, in.cm, got)
				}
				return nil
			})
		}
		for _, name := range more {
			waitInstalled(t, name)
		}
		peak, samples := stop()
		stopped = true
		t.Logf("first installs of %d charts in %v; then %d drift corrections, %d re-created and %d new at once; over %d samples: at most %d children at once (slots %d), by tenant %v (share %d), %d MiB resident together at the peak",
			len(installs), firsts.Round(time.Millisecond), len(installs)-len(teams), len(teams), len(more), samples, peak.all, renderSlots, peak.byTenant, tenantRenderSlots, peak.rss>>20)
		if peak.all > renderSlots {
			t.Fatalf("%d render children ran at once, more than the %d slots", peak.all, renderSlots)
		}
		for tn, n := range peak.byTenant {
			if n > tenantRenderSlots {
				t.Fatalf("tenant %s had %d render children at once, more than its share of %d", tn, n, tenantRenderSlots)
			}
		}
		if peak.all < 2 {
			t.Fatalf("at most %d render child seen at once: the measurement saw no overlap", peak.all)
		}
		if limit := int64(renderSlots) * sandbox.DefaultMemory; peak.rss > limit {
			t.Fatalf("render children held %d MiB at once, more than %d slots × %d MiB", peak.rss>>20, renderSlots, sandbox.DefaultMemory>>20)
		}
	}
}

var _ = registerHostile(
	hostileCase{
		name:   "fill the shared content store from the team's own HTTP server",
		attack: fillStore,
	},
	hostileCase{
		name:   "renders of every kind at once from three teams: first installs, drift corrections, re-created BundleDeployments",
		attack: renderEverything,
	},
)
