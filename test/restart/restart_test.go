package restart_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/manager"
	"github.com/rukpak/rukpak/pkg/envtest"
)

var env *envtest.Env

func TestMain(m *testing.M) { envtest.Run(m, &env) }

// writeLog records the write requests a manager sends, as "VERB path",
// and counts its reads, keeping the paths of those in namespace readsIn.
type writeLog struct {
	mu      sync.Mutex
	writes  []string
	reads   int
	readsIn string
	paths   []string
}

func (l *writeLog) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		l.mu.Lock()
		switch req.Method {
		case http.MethodGet, http.MethodHead:
			l.reads++
			if l.readsIn != "" && strings.Contains(req.URL.Path, "/namespaces/"+l.readsIn+"/") && req.URL.Query().Get("watch") == "" {
				l.paths = append(l.paths, req.URL.Path)
			}
		default:
			w := req.Method + " " + req.URL.Path
			if req.URL.Query().Get("dryRun") != "" {
				w += " dry-run"
			}
			if req.Header.Get("Content-Type") == "application/json-patch+json" {
				w += " json-patch"
			}
			l.writes = append(l.writes, w)
		}
		l.mu.Unlock()
		return next.RoundTrip(req)
	})
}

func (l *writeLog) snapshot() ([]string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.writes...), l.reads
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// startManager runs the whole manager in-process with its requests logged
// and returns a function that stops it and waits until it has stopped.
func startManager(t *testing.T, storeDir string, log *writeLog) func() {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(log.wrap)
	opts := manager.DefaultOptions()
	opts.StorageDir = storeDir
	opts.HealthProbeBindAddress = "0"
	opts.MetricsBindAddress = "0"
	opts.DefaultIdentity = manager.IdentityManager
	opts.SkipControllerNameValidation = true
	mgr, err := manager.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}
}

// TestRestartWritesNothing installs BundleDeployments, stops the manager
// and starts another over the same cluster and content store. The new one
// writes nothing — no apply, patch, create or delete of managed objects,
// Bundles, inventories or statuses — and still corrects drift: a managed
// object deleted afterwards comes back.
func TestRestartWritesNothing(t *testing.T) {
	ctx := context.Background()
	store := t.TempDir()
	ns := env.Namespace(t, "restart")
	first := &writeLog{}
	stop := startManager(t, store, first)

	var names []string
	for i := range 3 {
		files := map[string]string{}
		for j := range 4 {
			files[fmt.Sprintf("cm%d.yaml", j)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bd%d-cm%d\ndata:\n  value: %q\n", i, j, "v")
		}
		files["svc.yaml"] = fmt.Sprintf(service, i)
		src := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("src"), Namespace: v1alpha2.SystemNamespace},
			Immutable:  ptr.To(true),
			Data:       files,
		}
		if err := env.Client.Create(ctx, src); err != nil {
			t.Fatal(err)
		}
		bd := &v1alpha2.BundleDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("bd")},
			Spec: v1alpha2.BundleDeploymentSpec{
				ProvisionerClassName: v1alpha2.ClassPlain,
				InstallNamespace:     ns,
				Sources: []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeConfigMaps,
					ConfigMaps: []v1alpha2.ConfigMapSource{{ConfigMap: v1alpha2.LocalObjectReference{Name: src.Name}, Path: "manifests"}}}},
			},
		}
		if err := env.Client.Create(ctx, bd); err != nil {
			t.Fatal(err)
		}
		names = append(names, bd.Name)
	}
	for _, name := range names {
		waitInstalled(t, name)
	}
	// Let the first manager finish what follows an install (health,
	// annotations), so what the second one finds is settled.
	settled := func() error {
		for _, name := range names {
			bd := &v1alpha2.BundleDeployment{}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
				return err
			}
			if c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeProgressing); c == nil || c.Status != metav1.ConditionFalse {
				return fmt.Errorf("%s: Progressing = %+v", name, c)
			}
		}
		return nil
	}
	envtest.Eventually(t, 30*time.Second, settled)
	stop()

	second := &writeLog{readsIn: ns}
	done := reconciles(t)
	stop = startManager(t, store, second)
	defer stop()
	// The new manager has looked at every BundleDeployment once it has
	// finished a reconcile for each (the registry is shared by both
	// managers of this process: count from where the first one left off)
	// and its requests have stopped.
	envtest.Eventually(t, 30*time.Second, func() error {
		if n := reconciles(t) - done; n < len(names) {
			return fmt.Errorf("%d reconciles finished, want %d", n, len(names))
		}
		_, before := second.snapshot()
		time.Sleep(2 * time.Second)
		if _, after := second.snapshot(); after != before {
			return fmt.Errorf("manager still reading (%d -> %d requests)", before, after)
		}
		return nil
	})
	writes, reads := second.snapshot()
	var bad []string
	for _, w := range writes {
		if !strings.Contains(w, "/leases/") && !strings.Contains(w, "/events") &&
			!strings.Contains(w, "/selfsubjectreviews") && !strings.Contains(w, "/subjectaccessreviews") && !strings.Contains(w, "/tokenreviews") {
			bad = append(bad, w)
		}
	}
	if len(bad) > 0 {
		t.Fatalf("the restarted manager made %d write(s) after %d reads:\n%s", len(bad), reads, strings.Join(bad, "\n"))
	}
	// It verified the objects from its watches, once they listed them:
	// no managed object was read on its own.
	second.mu.Lock()
	var single []string
	for _, p := range second.paths {
		// .../namespaces/NS/RESOURCE/NAME, not a list of RESOURCE.
		if _, rest, _ := strings.Cut(p, "/namespaces/"+ns+"/"); strings.Contains(rest, "/") {
			single = append(single, p)
		}
	}
	second.mu.Unlock()
	if len(single) > 0 {
		t.Errorf("the restarted manager read %d managed object(s) one by one instead of from its watches:\n%s", len(single), strings.Join(single, "\n"))
	}

	// Drift is still corrected by the new manager.
	victim := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bd1-cm2"}}
	if err := env.Client.Delete(ctx, victim); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 10*time.Second, func() error {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(victim), &corev1.ConfigMap{})
	})
}

// service has no controller to wait for here (envtest runs none) and is
// changed by the API server on create (clusterIP): what rukpak applied is
// less than what is there.
const service = `apiVersion: v1
kind: Service
metadata:
  name: web%d
spec:
  selector: {app: web}
  ports:
  - port: 80
`

// reconciles is how many BundleDeployment reconciles the managers of this
// process have finished, from controller-runtime's metrics.
func reconciles(t *testing.T) int {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0.0
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == "bundledeployment" {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return int(n)
}

func waitInstalled(t *testing.T, name string) {
	t.Helper()
	envtest.Eventually(t, 30*time.Second, func() error {
		bd := &v1alpha2.BundleDeployment{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
			return err
		}
		c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled)
		if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != bd.Generation {
			return fmt.Errorf("Installed = %+v", c)
		}
		return nil
	})
}
