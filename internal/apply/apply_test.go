//go:build integration

package apply_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/inventory"
	"github.com/rukpak/rukpak/pkg/envtest"
)

var env *envtest.Env

func TestMain(m *testing.M) { envtest.Run(m, &env) }

// The owner kind and keys of the tests' engines: not rukpak's, so that
// a key the engine does not take from its Options shows.
const testOwnerKind = "BundleDeployment"

var testKeys = apply.Keys{
	OwnerKind:          "test.example.com/owner-kind",
	OwnerName:          "test.example.com/owner-name",
	OwnerUID:           "test.example.com/owner-uid",
	Revision:           "test.example.com/revision",
	ReplaceOnImmutable: "test.example.com/replace-on-immutable",
	Optional:           "test.example.com/optional",
}

// newEngine is an engine over the test API server whose hooks are polled
// (its reader cannot watch).
func newEngine(t *testing.T) *apply.Engine {
	t.Helper()
	return engineOver(t, env.Config, false, 0)
}

// engineOver is an engine whose requests go over cfg; withWatch gives it
// a reader that can watch (hooks are watched rather than polled), and
// hookTimeout bounds each hook (0: the default).
func engineOver(t *testing.T, cfg *rest.Config, withWatch bool, hookTimeout time.Duration) *apply.Engine {
	t.Helper()
	return engineWithMapper(t, cfg, withWatch, hookTimeout, nil)
}

// engineWithMapper is engineOver with the engine's and its clients'
// RESTMapper wrapped by wrap (nil: as it is).
func engineWithMapper(t *testing.T, cfg *rest.Config, withWatch bool, hookTimeout time.Duration, wrap func(meta.RESTMapper) meta.RESTMapper) *apply.Engine {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var mapper meta.RESTMapper
	mapper, err = apiutil.NewDynamicRESTMapper(cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	if wrap != nil {
		mapper = wrap(mapper)
	}
	md, err := apply.NewMetadataClient(cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewWithWatch(cfg, client.Options{HTTPClient: hc, Scheme: env.Scheme, Mapper: mapper})
	if err != nil {
		t.Fatal(err)
	}
	var reader client.Reader = c
	if !withWatch {
		reader = struct{ client.Reader }{c} // hides Watch
	}
	return apply.New(c, reader, md, mapper, apply.Options{FieldManager: "rukpak-test", OwnerKind: testOwnerKind, Keys: testKeys, Concurrency: 4, EstablishTimeout: 30 * time.Second, HookTimeout: hookTimeout})
}

func objs(t *testing.T, docs ...string) []*unstructured.Unstructured {
	t.Helper()
	out := make([]*unstructured.Unstructured, 0, len(docs))
	for _, d := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(d), &u.Object); err != nil {
			t.Fatalf("test object: %v", err)
		}
		out = append(out, u)
	}
	return out
}

func cm(name, ns, value string) string {
	meta := "name: " + name
	if ns != "" {
		meta += "\n  namespace: " + ns
	}
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  %s\ndata:\n  value: %q\n", meta, value)
}

func crd(group, plural, kind string) string {
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[2]s.%[1]s
spec:
  group: %[1]s
  scope: Namespaced
  names: {plural: %[2]s, singular: %[3]s, kind: %[4]s, listKind: %[4]sList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, maximum: 10}
`, group, plural, strings.ToLower(kind), kind)
}

func actions(cs *apply.ChangeSet) map[string]apply.Action {
	out := map[string]apply.Action{}
	for _, c := range cs.Entries {
		out[c.ID.Kind+"/"+c.ID.Name] = c.Action
	}
	return out
}

func exists(t *testing.T, apiVersion, kind, ns, name string) bool {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("getting %s %s/%s: %v", kind, ns, name, err)
	}
	return err == nil
}

func TestPrepare(t *testing.T) {
	e := newEngine(t)
	owner := apply.Owner{Name: "bd", Revision: "bd-1"}
	tests := []struct {
		name     string
		docs     []string
		wantCode apply.Code
		wantMsg  string
		wantIDs  []string
	}{
		{
			name:    "namespaced objects land in the install namespace; cluster-scoped lose theirs",
			docs:    []string{cm("a", "", "1"), cm("b", "elsewhere", "2"), "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: r\n  namespace: ignored\n"},
			wantIDs: []string{"ConfigMap install/a", "ConfigMap elsewhere/b", "ClusterRole.rbac.authorization.k8s.io r"},
		},
		{
			name:    "CRDs and Namespaces come first",
			docs:    []string{cm("a", "", "1"), "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: first\n", crd("first.example.com", "things", "Thing"), "apiVersion: first.example.com/v1\nkind: Thing\nmetadata:\n  name: t\n"},
			wantIDs: []string{"Namespace first", "CustomResourceDefinition.apiextensions.k8s.io things.first.example.com", "ConfigMap install/a", "Thing.first.example.com install/t"},
		},
		{
			name:     "duplicate after namespace defaulting",
			docs:     []string{cm("dup", "", "1"), cm("dup", "install", "2")},
			wantCode: apply.CodeInvalidContent, wantMsg: "ConfigMap install/dup appears twice",
		},
		{
			name:     "unknown kind",
			docs:     []string{"apiVersion: nowhere.example.com/v1\nkind: Widget\nmetadata:\n  name: w\n"},
			wantCode: apply.CodeUnknownKind, wantMsg: "Widget",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := e.Prepare(objs(t, tt.docs...), "install", owner)
			if tt.wantCode != 0 {
				f := apply.As(err)
				if f == nil || f.Code != tt.wantCode || !strings.Contains(f.Message, tt.wantMsg) {
					t.Fatalf("err = %v, want %s containing %q", err, tt.wantCode, tt.wantMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, id := range p.IDs() {
				got = append(got, id.String())
			}
			if strings.Join(got, ",") != strings.Join(tt.wantIDs, ",") {
				t.Fatalf("IDs = %v, want %v", got, tt.wantIDs)
			}
		})
	}
}

func TestApplyCRDAndCustomResourceInOneBundle(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	ns := envtest.UniqueName("crd")
	group := envtest.UniqueName("g") + ".example.com"
	docs := []string{
		"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + ns + "\n",
		crd(group, "gadgets", "Gadget"),
		"apiVersion: " + group + "/v1\nkind: Gadget\nmetadata:\n  name: g1\n  namespace: " + ns + "\nspec:\n  size: 3\n",
		cm("in-new-namespace", ns, "1"),
	}
	p, err := e.Prepare(objs(t, docs...), ns, apply.Owner{Name: "bd", Revision: "bd-1"})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := e.Apply(ctx, p, apply.ApplyOptions{})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	for k, a := range actions(cs) {
		if a != apply.Created {
			t.Errorf("%s: %s, want created", k, a)
		}
	}
	if len(cs.Entries) != 4 {
		t.Fatalf("%d changes, want 4", len(cs.Entries))
	}
	if !exists(t, group+"/v1", "Gadget", ns, "g1") {
		t.Fatal("Gadget g1 was not created")
	}
	// Applying the same plan again changes nothing.
	cs, err = e.Apply(ctx, p, apply.ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, a := range actions(cs) {
		if a != apply.Unchanged {
			t.Errorf("second apply: %s %s, want unchanged", k, a)
		}
	}
}

// laggingMapper does not know the kinds of group, as a RESTMapper whose
// discovery has not caught up with a CRD the API server has Established
// (discovery is updated after the CRD is served).
type laggingMapper struct {
	meta.RESTMapper
	group string
}

func (m laggingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if gk.Group == m.group {
		return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
	}
	return m.RESTMapper.RESTMapping(gk, versions...)
}

// TestCustomResourceOfBundleCRDWithoutDiscovery: the custom resources of
// a CRD of the bundle are validated, written and read again through the
// resource the CRD names, not through discovery, which may not show the
// kind yet when the CRD is Established (seen as a ValidationFailed "no
// matches for kind" under load). The second apply (of objects that
// exist) reads them the same way.
func TestCustomResourceOfBundleCRDWithoutDiscovery(t *testing.T) {
	ctx := context.Background()
	group := envtest.UniqueName("lag") + ".example.com"
	e := engineWithMapper(t, env.Config, false, 0, func(m meta.RESTMapper) meta.RESTMapper { return laggingMapper{RESTMapper: m, group: group} })
	ns := env.Namespace(t, "lag")
	docs := []string{crd(group, "gadgets", "Gadget")}
	for i := range 3 {
		docs = append(docs, fmt.Sprintf("apiVersion: %s/v1\nkind: Gadget\nmetadata:\n  name: g%d\n  namespace: %s\nspec:\n  size: 3\n", group, i, ns))
	}
	p, err := e.Prepare(objs(t, docs...), ns, apply.Owner{Name: "bd", Revision: "bd-1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []apply.Action{apply.Created, apply.Unchanged} {
		cs, err := e.Apply(ctx, p, apply.ApplyOptions{})
		if err != nil {
			t.Fatalf("Apply: %v", err)
		}
		for k, a := range actions(cs) {
			if a != want {
				t.Errorf("%s: %s, want %s", k, a, want)
			}
		}
	}
	if !exists(t, group+"/v1", "Gadget", ns, "g2") {
		t.Fatal("Gadget g2 was not created")
	}
}

func TestInvalidObjectFailsBeforeAnyWrite(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	ns := env.Namespace(t, "invalid")
	group := envtest.UniqueName("g") + ".example.com"
	tests := []struct {
		name string
		docs []string
		// absent must not exist after the failed apply.
		absent [][4]string
		want   string
	}{
		{
			name:   "invalid Service among good objects",
			docs:   []string{cm("good", "", "1"), "apiVersion: v1\nkind: Service\nmetadata:\n  name: broken\nspec:\n  ports:\n  - port: 99999\n"},
			absent: [][4]string{{"v1", "ConfigMap", ns, "good"}},
			want:   "Service " + ns + "/broken",
		},
		{
			name:   "custom resource violating its bundle CRD's schema",
			docs:   []string{crd(group, "sprockets", "Sprocket"), cm("good2", "", "1"), "apiVersion: " + group + "/v1\nkind: Sprocket\nmetadata:\n  name: huge\nspec:\n  size: 99\n"},
			absent: [][4]string{{"v1", "ConfigMap", ns, "good2"}, {group + "/v1", "Sprocket", ns, "huge"}},
			want:   "Sprocket." + group + " " + ns + "/huge",
		},
		{
			name:   "object in a namespace that does not exist",
			docs:   []string{cm("good3", "", "1"), cm("lost", "no-such-namespace", "1")},
			absent: [][4]string{{"v1", "ConfigMap", ns, "good3"}},
			want:   "ConfigMap no-such-namespace/lost",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := e.Prepare(objs(t, tt.docs...), ns, apply.Owner{Name: "bd", Revision: "bd-1"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Apply(ctx, p, apply.ApplyOptions{})
			f := apply.As(err)
			if f == nil || f.Code != apply.CodeRefused || !strings.Contains(f.Message, tt.want) {
				t.Fatalf("err = %v, want ValidationFailed naming %q", err, tt.want)
			}
			for _, a := range tt.absent {
				if exists(t, a[0], a[1], a[2], a[3]) {
					t.Errorf("%s %s/%s was written although the plan failed validation", a[1], a[2], a[3])
				}
			}
		})
	}
}

func TestPruneOrderOwnershipAndCRDPolicy(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	ns := envtest.UniqueName("prune")
	group := envtest.UniqueName("g") + ".example.com"
	docs := []string{
		"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + ns + "\n",
		crd(group, "cogs", "Cog"),
		cm("mine", ns, "1"),
		cm("taken", ns, "1"),
		"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: " + ns + "-role\n",
	}
	p, err := e.Prepare(objs(t, docs...), ns, apply.Owner{Name: "owner-a", Revision: "owner-a-1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Apply(ctx, p, apply.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	// Another owner takes "taken" over: pruning must leave it alone.
	taken, err := e.Prepare(objs(t, cm("taken", ns, "2")), ns, apply.Owner{Name: "owner-b", Revision: "owner-b-1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Apply(ctx, taken, apply.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	cs, err := e.Prune(ctx, "owner-a", p.IDs(), apply.PruneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := actions(cs)
	want := map[string]apply.Action{
		"ConfigMap/mine": apply.Deleted, "ConfigMap/taken": apply.Skipped, "ClusterRole/" + ns + "-role": apply.Deleted,
		"Namespace/" + ns: apply.Deleted, "CustomResourceDefinition/cogs." + group: apply.Kept,
	}
	for k, a := range want {
		if got[k] != a {
			t.Errorf("%s: %q, want %q", k, got[k], a)
		}
	}
	// Namespaced objects go before the Namespace, CRDs last.
	var order []string
	for _, c := range cs.Entries {
		order = append(order, c.ID.Kind)
	}
	if strings.Join(order, ",") != "ConfigMap,ConfigMap,ClusterRole,Namespace,CustomResourceDefinition" {
		t.Errorf("prune order = %v", order)
	}
	if !exists(t, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "cogs."+group) {
		t.Fatal("CRD was deleted without DeleteCRDs")
	}
	for _, c := range cs.Entries {
		if c.Action == apply.Kept && c.UID == "" {
			t.Errorf("kept %s without its UID", c.ID)
		}
	}
	if _, err := e.Prune(ctx, "owner-a", p.IDs(), apply.PruneOptions{DeleteCRDs: true}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 10*time.Second, func() error {
		if exists(t, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "cogs."+group) {
			return fmt.Errorf("CRD cogs.%s still there", group)
		}
		return nil
	})
	// Pruning what is gone already is fine.
	if _, err := e.Prune(ctx, "owner-a", []inventory.ID{{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "never"}}, apply.PruneOptions{}); err != nil {
		t.Fatal(err)
	}
}
