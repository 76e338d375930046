//go:build integration

package objectwatch

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/identity"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// env is the API server the watches list and watch; its Config is an
// admin, allowed to impersonate.
var env *envtest.Env

func TestMain(m *testing.M) { envtest.Run(m, &env) }

// watchedLabel is the label the tests' Watchers select by.
const watchedLabel = "test.rukpak.io/watched"

var (
	configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	configMapGVK  = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
)

// event is one call of a Watcher's Handler.
type event struct {
	kind      schema.GroupVersionKind
	namespace string
	name      string
	value     string // the object's "v" label
	oldValue  string // old's "v" label; "" when old is nil
	hasOld    bool
	deleted   bool
}

// recorder records a Watcher's events.
type recorder struct {
	mu     sync.Mutex
	events []event
}

func (r *recorder) handle(kind schema.GroupVersionKind, obj, old *metav1.PartialObjectMetadata, deleted bool) {
	e := event{kind: kind, namespace: obj.Namespace, name: obj.Name, value: obj.Labels["v"], deleted: deleted}
	if old != nil {
		e.hasOld, e.oldValue = true, old.Labels["v"]
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// of returns the events of the object namespace/name.
func (r *recorder) of(namespace, name string) []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []event
	for _, e := range r.events {
		if e.namespace == namespace && e.name == name {
			out = append(out, e)
		}
	}
	return out
}

// clients hands out metadata clients per identity from an identity.Pool
// over the env's admin config, as the manager does.
func clients(t testing.TB) (Clients, *identity.Pool) {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{HTTPClient: hc, Scheme: env.Scheme, Mapper: mapper})
	if err != nil {
		t.Fatal(err)
	}
	md, err := apply.NewMetadataClient(cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	pool := identity.NewPool(cfg, hc, env.Scheme, mapper, &identity.Clients{Client: c, Metadata: md}, 0)
	return func(id identity.Identity) (metadata.Interface, error) {
		c, err := pool.For(id)
		if err != nil {
			return nil, err
		}
		return c.Metadata, nil
	}, pool
}

// newWatcher returns a Watcher selecting watchedLabel, its recorder, and
// stops it when the test ends.
func newWatcher(t testing.TB) (*Watcher, *recorder) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cl, _ := clients(t)
	rec := &recorder{}
	return New(ctx, watchedLabel, cl, rec.handle), rec
}

// key is a watch of ConfigMaps in namespace as id.
func key(id identity.Identity, namespace string) Key {
	return Key{Identity: id, Resource: configMapsGVR, Kind: configMapGVK, Namespace: namespace}
}

// configMap is a ConfigMap, labelled watchedLabel if watched, with label
// v=value.
func configMap(ns, name string, watched bool, value string) *corev1.ConfigMap {
	labels := map[string]string{"v": value}
	if watched {
		labels[watchedLabel] = "yes"
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}}
}

func create(t testing.TB, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		if err := env.Client.Create(context.Background(), obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
}

// seen waits until w's watch of k holds ns/name with label v=value.
func seen(t testing.TB, w *Watcher, k Key, ns, name, value string) {
	t.Helper()
	envtest.Eventually(t, 30*time.Second, func() error {
		obj, ok := w.Get(k, ns, name)
		if !ok {
			return fmt.Errorf("%s/%s not seen by the watch of %+v", ns, name, k)
		}
		if obj.Labels["v"] != value {
			return fmt.Errorf("%s/%s seen with v=%q, want %q", ns, name, obj.Labels["v"], value)
		}
		return nil
	})
}

// allowConfigMaps lets subject list and watch ConfigMaps in ns.
func allowConfigMaps(t testing.TB, ns string, subject rbacv1.Subject) {
	t.Helper()
	name := envtest.UniqueName("watch-configmaps")
	create(t,
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list", "watch"}},
		}},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects:   []rbacv1.Subject{subject},
		},
	)
}
