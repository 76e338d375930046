//go:build integration

package bundledeployment_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/controller/bundledeployment"
	"github.com/rukpak/rukpak/internal/inventory"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// countingReader counts the requests a reader makes.
type countingReader struct {
	client.Reader
	mu         sync.Mutex
	gets, list int
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.mu.Lock()
	c.gets++
	c.mu.Unlock()
	return c.Reader.Get(ctx, key, obj, opts...)
}

func (c *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.mu.Lock()
	c.list++
	c.mu.Unlock()
	return c.Reader.List(ctx, list, opts...)
}

// TestReadForHealth: many objects of a kind in a namespace are read with
// paged lists of the owner's objects, a few one by one; missing ones are
// reported missing, and objects carrying the owner label that are not the
// revision's are left out.
func TestReadForHealth(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "health-read")
	owner := envtest.UniqueName("bd")
	labels := map[string]string{v1alpha2.LabelOwnerName: owner}
	var ids []inventory.ID
	const configMaps, secrets = bundledeployment.ListPage + 20, bundledeployment.ListAtLeast - 2 // with the missing one, one fewer than a list
	for i := range configMaps {
		name := fmt.Sprintf("cm-%03d", i)
		if err := env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, inventory.ID{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: name})
	}
	for i := range secrets {
		name := fmt.Sprintf("secret-%d", i)
		if err := env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, inventory.ID{Version: "v1", Kind: "Secret", Namespace: ns, Name: name})
	}
	// Labelled for the owner but not in the revision.
	if err := env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "stranger", Namespace: ns, Labels: labels}}); err != nil {
		t.Fatal(err)
	}
	missing := []inventory.ID{
		{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "cm-missing"},
		{Version: "v1", Kind: "Secret", Namespace: ns, Name: "secret-missing"},
	}
	ids = append(ids, missing...)

	reader := &countingReader{Reader: env.Client}
	seen := map[inventory.ID]bool{}
	var absent []string
	err := bundledeployment.ReadForHealth(ctx, reader, owner, ids, func(id inventory.ID, obj *unstructured.Unstructured) {
		if seen[id] {
			t.Errorf("%s visited twice", id)
		}
		seen[id] = true
		switch {
		case obj == nil:
			absent = append(absent, id.Name)
		case obj.GetName() != id.Name || obj.GetKind() != id.Kind:
			t.Errorf("%s visited with %s %s", id, obj.GetKind(), obj.GetName())
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != len(ids) {
		t.Errorf("%d of %d objects visited", len(seen), len(ids))
	}
	sort.Strings(absent)
	if fmt.Sprint(absent) != "[cm-missing secret-missing]" {
		t.Errorf("reported missing: %v, want cm-missing and secret-missing", absent)
	}
	// ConfigMaps: 2 pages; Secrets (and the missing one) one by one.
	if reader.list != 2 || reader.gets != secrets+1 {
		t.Errorf("%d lists and %d gets, want 2 lists and %d gets", reader.list, reader.gets, secrets+1)
	}
}
