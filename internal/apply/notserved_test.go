//go:build integration

package apply_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// staleMapper is a RESTMapper that still maps a kind the cluster no
// longer serves (its CRD was deleted), as controller-runtime's dynamic
// mapper does: it never forgets a kind it knew.
type staleMapper struct {
	meta.RESTMapper
	gone schema.GroupVersionKind
}

func (m staleMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if gk == m.gone.GroupKind() {
		return &meta.RESTMapping{
			Resource:         m.gone.GroupVersion().WithResource(strings.ToLower(m.gone.Kind) + "s"),
			GroupVersionKind: m.gone,
			Scope:            meta.RESTScopeNamespace,
		}, nil
	}
	return m.RESTMapper.RESTMapping(gk, versions...)
}

// TestKindNotServedAnyMore: a kind the engine's RESTMapper maps but the
// API server no longer serves is answered with a bare 404, on the dry-run
// of a validated plan and on the create of a direct one (a first
// install), and on the list of a direct plan's many objects: each is
// UnknownKind, which the caller retries, never a refusal of the content
// (Refused, held), and Options.KindNotServed is told that the RESTMapper
// is out of date.
func TestKindNotServedAnyMore(t *testing.T) {
	ctx := context.Background()
	gone := schema.GroupVersionKind{Group: envtest.UniqueName("gone") + ".example.com", Version: "v1", Kind: "Monitor"}
	hc, err := rest.HTTPClientFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	dynamic, err := apiutil.NewDynamicRESTMapper(env.Config, hc)
	if err != nil {
		t.Fatal(err)
	}
	mapper := staleMapper{RESTMapper: dynamic, gone: gone}
	md, err := apply.NewMetadataClient(env.Config, hc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{HTTPClient: hc, Scheme: env.Scheme, Mapper: mapper})
	if err != nil {
		t.Fatal(err)
	}
	var told atomic.Int32
	e := apply.New(c, c, md, mapper, apply.Options{FieldManager: "rukpak-test", OwnerKind: testOwnerKind, Keys: testKeys, Concurrency: 4,
		EstablishTimeout: 30 * time.Second, KindNotServed: func() { told.Add(1) }})

	monitor := func(name string) string {
		return "apiVersion: " + gone.GroupVersion().String() + "\nkind: Monitor\nmetadata:\n  name: " + name + "\nspec: {port: web}\n"
	}
	many := []string{cm("beside", "", "1")}
	for i := range 70 { // more than a direct plan reads one by one: listed
		many = append(many, monitor(fmt.Sprintf("m%02d", i)))
	}
	for _, tt := range []struct {
		name   string
		docs   []string
		direct bool
	}{
		{"validated: the dry-run", []string{cm("beside", "", "1"), monitor("web")}, false},
		{"direct: the create", []string{cm("beside", "", "1"), monitor("web")}, true},
		{"direct: the list of many", many, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ns := env.Namespace(t, "notserved")
			before := told.Load()
			p, err := e.Prepare(objs(t, tt.docs...), ns, apply.Owner{Name: "notserved", Revision: "r1", UID: "u1"})
			if err != nil {
				t.Fatalf("Prepare: %v (the stale RESTMapper maps the kind)", err)
			}
			_, err = e.Apply(ctx, p, apply.ApplyOptions{Collisions: &apply.Collisions{}, Direct: tt.direct})
			f := apply.As(err)
			if f == nil || f.Code != apply.CodeUnknownKind || !strings.Contains(f.Message, "Monitor") || !strings.Contains(f.Message, "not served") {
				t.Fatalf("Apply: %v (code %v), want UnknownKind naming the Monitor and saying it is not served", err, apply.CodeOf(err))
			}
			if told.Load() == before {
				t.Fatal("KindNotServed was not told")
			}
		})
	}
}
