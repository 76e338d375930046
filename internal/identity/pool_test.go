//go:build integration

package identity

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/pkg/envtest"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// newPool returns a Pool of size over the env's admin config, built the way
// the manager builds its own, and the manager's clients it hands out.
func newPool(t *testing.T, size int) (*Pool, *Clients) {
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
	manager := &Clients{Client: c, Metadata: md}
	return NewPool(cfg, hc, env.Scheme, mapper, manager, size), manager
}

func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		if err := env.Client.Create(context.Background(), obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
}

func configMap(ns, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string]string{"k": "v"}}
}

// TestPoolActsAsServiceAccount: a ServiceAccount's clients are refused
// what its RBAC does not allow, and the refusal names the ServiceAccount.
func TestPoolActsAsServiceAccount(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "identity")
	other := env.Namespace(t, "identity-other")
	const sa = "installer"
	create(t,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "read-configmaps", Namespace: ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}},
		}},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "read-configmaps", Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "read-configmaps"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}},
		},
		configMap(ns, "mine"),
		configMap(other, "theirs"),
	)
	pool, _ := newPool(t, 0)
	id := ServiceAccount(ns, sa)
	c, err := pool.For(id)
	if err != nil {
		t.Fatal(err)
	}

	// The RBAC authorizer sees the binding through an informer.
	envtest.Eventually(t, 10*time.Second, func() error {
		return c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "mine"}, &corev1.ConfigMap{})
	})
	if _, err := c.Metadata.Resource(configMaps).Namespace(ns).Get(ctx, "mine", metav1.GetOptions{}); err != nil {
		t.Errorf("metadata Get in %s: %v", ns, err)
	}

	forbidden := func(what string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s: want Forbidden, got %v", what, err)
			return
		}
		if want := "system:serviceaccount:" + ns + ":" + sa; !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error does not name %s: %v", what, want, err)
		}
	}
	err = c.Client.Get(ctx, client.ObjectKey{Namespace: other, Name: "theirs"}, &corev1.ConfigMap{})
	forbidden("Get in another namespace", err)
	_, err = c.Metadata.Resource(configMaps).Namespace(other).Get(ctx, "theirs", metav1.GetOptions{})
	forbidden("metadata Get in another namespace", err)
	err = c.Client.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns))
	forbidden("List (a verb not granted)", err)
	err = c.Client.Delete(ctx, configMap(ns, "mine"))
	forbidden("Delete (a verb not granted)", err)

	// The admin's own clients are unaffected: impersonation is per client.
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: other, Name: "theirs"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("admin Get: %v", err)
	}
}

// TestPoolServiceAccountGroups: an impersonated ServiceAccount has the
// groups the API server gives ServiceAccounts, so bindings to
// system:serviceaccounts:NS apply to it.
func TestPoolServiceAccountGroups(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "identity-group")
	create(t,
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "list-configmaps", Namespace: ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list"}},
		}},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "list-configmaps", Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "list-configmaps"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:serviceaccounts:" + ns}},
		},
	)
	pool, _ := newPool(t, 0)
	c, err := pool.For(ServiceAccount(ns, "anyone"))
	if err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 10*time.Second, func() error {
		return c.Client.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns))
	})
}

// TestPoolLRU: the pool keeps at most size identities, reuses the clients
// of those it keeps, rebuilds those it dropped, and Forget drops one.
func TestPoolLRU(t *testing.T) {
	const size = 4
	pool, manager := newPool(t, size)
	ids := make([]Identity, size+5)
	got := make([]*Clients, len(ids))
	for i := range ids {
		ids[i] = ServiceAccount("ns", fmt.Sprintf("sa-%d", i))
		c, err := pool.For(ids[i])
		if err != nil {
			t.Fatal(err)
		}
		got[i] = c
	}
	if n := pool.Len(); n != size {
		t.Fatalf("Len() = %d after %d identities, want %d", n, len(ids), size)
	}

	// The most recent size identities are kept: the same clients again.
	for i := len(ids) - size; i < len(ids); i++ {
		c, err := pool.For(ids[i])
		if err != nil {
			t.Fatal(err)
		}
		if c != got[i] {
			t.Errorf("For(%s) built new clients; want the kept ones", ids[i])
		}
	}
	// Use the oldest kept one, so that it is the most recently used; then
	// a dropped identity comes back (rebuilt) and evicts the next oldest.
	oldestKept := ids[len(ids)-size]
	if _, err := pool.For(oldestKept); err != nil {
		t.Fatal(err)
	}
	back, err := pool.For(ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if back == got[0] {
		t.Errorf("For(%s) returned the clients it had dropped", ids[0])
	}
	if n := pool.Len(); n != size {
		t.Errorf("Len() = %d, want %d", n, size)
	}
	if c, _ := pool.For(oldestKept); c != got[len(ids)-size] {
		t.Errorf("the most recently used %s was dropped", oldestKept)
	}
	if c, _ := pool.For(ids[len(ids)-size+1]); c == got[len(ids)-size+1] {
		t.Errorf("the least recently used %s was kept", ids[len(ids)-size+1])
	}

	// Forget drops one; forgetting it again, or one never used, is a no-op.
	pool.Forget(ids[0])
	if n := pool.Len(); n != size-1 {
		t.Errorf("Len() = %d after Forget, want %d", n, size-1)
	}
	pool.Forget(ids[0])
	pool.Forget(ServiceAccount("ns", "never-used"))
	pool.Forget(Manager)
	if n := pool.Len(); n != size-1 {
		t.Errorf("Len() = %d after no-op Forgets, want %d", n, size-1)
	}
	if c, _ := pool.For(ids[0]); c == back {
		t.Errorf("For(%s) after Forget returned the forgotten clients", ids[0])
	}

	// The manager's clients are what the pool was given, never pooled.
	for range 3 {
		c, err := pool.For(Manager)
		if err != nil {
			t.Fatal(err)
		}
		if c != manager {
			t.Errorf("For(Manager) = %p, want the manager's clients %p", c, manager)
		}
	}
	if n := pool.Len(); n != size {
		t.Errorf("Len() = %d after For(Manager), want %d", n, size)
	}
}

// TestPoolDefaultSize: a size below 1 means DefaultSize.
func TestPoolDefaultSize(t *testing.T) {
	for _, size := range []int{0, -1} {
		pool, _ := newPool(t, size)
		for i := range DefaultSize + 10 {
			if _, err := pool.For(ServiceAccount("ns", fmt.Sprintf("sa-%d", i))); err != nil {
				t.Fatal(err)
			}
		}
		if n := pool.Len(); n != DefaultSize {
			t.Errorf("size %d: Len() = %d, want %d", size, n, DefaultSize)
		}
	}
}

// TestPoolConcurrent: concurrent callers for one identity get one set of
// clients, and concurrent churn keeps the bound (run with -race).
func TestPoolConcurrent(t *testing.T) {
	const size, n = 8, 32
	pool, _ := newPool(t, size)
	id := ServiceAccount("ns", "shared")
	got := make([]*Clients, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c, err := pool.For(id)
			if err != nil {
				t.Error(err)
			}
			got[i] = c
		})
	}
	wg.Wait()
	for i := range got {
		if got[i] == nil || got[i] != got[0] {
			t.Fatalf("caller %d got clients %p, caller 0 %p: want one set", i, got[i], got[0])
		}
	}

	for i := range n {
		wg.Go(func() {
			for j := range 10 {
				id := ServiceAccount("ns", fmt.Sprintf("churn-%d-%d", i, j))
				if _, err := pool.For(id); err != nil {
					t.Error(err)
				}
				if j%3 == 0 {
					pool.Forget(id)
				}
				_ = pool.Len()
			}
		})
	}
	wg.Wait()
	// Forgets run last in each goroutine, so fewer may be left.
	if l := pool.Len(); l > size {
		t.Errorf("Len() = %d after churn, want ≤ %d", l, size)
	}
}
