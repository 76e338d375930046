package shard

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// countingReader counts the lists it serves.
type countingReader struct {
	client.Reader
	lists int
}

func (c *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.lists++
	return c.Reader.List(ctx, list, opts...)
}

// A BundleDeployment whose first install failed has its Bundles listed
// once, not at each of its reconciles; once forgotten (it was deleted),
// one of the same name, a new life, is listed again, and so is it on
// another shard.
func TestAdoptListsOncePerShard(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1alpha2.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).Build()
	api := &countingReader{Reader: c}
	a := &Adopter{Cache: c, API: api, Client: c}
	failed := func(uid, shard string) *v1alpha2.BundleDeployment {
		bd := &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: "app", UID: types.UID("uid-" + uid)}}
		if shard != "" {
			bd.Labels = map[string]string{v1alpha2.LabelShard: shard}
		}
		bd.Status.ObservedGeneration = 1
		return bd
	}
	for i, step := range []struct {
		bd        *v1alpha2.BundleDeployment
		forget    bool
		wantLists int
	}{
		{bd: failed("1", ""), wantLists: 1},
		{bd: failed("1", ""), wantLists: 1},
		{bd: failed("1", "b"), wantLists: 2},
		{bd: failed("1", "b"), wantLists: 2},
		{bd: failed("2", "b"), wantLists: 3},
		{bd: failed("2", "b"), forget: true, wantLists: 4},
	} {
		if step.forget {
			a.Forget("app")
		}
		ok, err := a.Adopt(context.Background(), step.bd)
		if err != nil || !ok {
			t.Fatalf("step %d: Adopt = %v, %v", i, ok, err)
		}
		if api.lists != step.wantLists {
			t.Fatalf("step %d: %d lists, want %d", i, api.lists, step.wantLists)
		}
	}
}
