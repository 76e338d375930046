//go:build integration

package apply_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/inventory"
)

// requestLog records the requests an engine sends to the (real) API
// server, by method and dry-run.
type requestLog struct {
	mu   sync.Mutex
	seen map[string]int
}

func (l *requestLog) RoundTrip(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		key := req.Method
		if req.URL.Query().Get("dryRun") != "" {
			key += " dry-run"
		}
		if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/configmaps") {
			// A read of one ConfigMap, or a list of them.
			if strings.HasSuffix(req.URL.Path, "/configmaps") {
				key += " list"
			} else {
				key += " one"
			}
		}
		l.mu.Lock()
		l.seen[key]++
		l.mu.Unlock()
		return next.RoundTrip(req)
	})
}

func (l *requestLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.seen)
}

func (l *requestLog) count(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seen[key]
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// countingEngine is an engine whose requests are counted in the log it
// returns.
func countingEngine(t *testing.T) (*apply.Engine, *requestLog) {
	t.Helper()
	log := &requestLog{seen: map[string]int{}}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(log.RoundTrip)
	return engineOver(t, cfg, false, 0), log
}

// TestDirectPlans: a Direct plan (a first install) creates its objects
// without a dry-run or a read first (one create each), still refuses to
// take over an object it does not own and leaves nothing it created when
// it does, and reports an object the API server refuses as
// ValidationFailed naming it. Hashes are stable and tell changed objects
// from unchanged ones.
func TestDirectPlans(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "direct")
	e, log := countingEngine(t)
	owner := apply.Owner{Name: "bd", Revision: "bd-1", UID: "uid-1"}

	p, err := e.Prepare(objs(t, cm("a", "", "1"), cm("b", "", "2")), ns, owner)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := e.Apply(ctx, p, apply.ApplyOptions{Collisions: &apply.Collisions{}, Direct: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(cs); got["ConfigMap/a"] != apply.Created || got["ConfigMap/b"] != apply.Created {
		t.Fatalf("actions = %v, want both created", got)
	}
	if n := log.count("PATCH dry-run"); n != 0 {
		t.Fatalf("a direct plan made %d dry-run requests", n)
	}
	if n, reads := log.count("POST"), log.count("GET one"); n != 2 || reads != 0 || log.count("PATCH") != 0 {
		t.Fatalf("a direct plan of 2 new objects made %d creates, %d reads and %d applies, want 2 creates only", n, reads, log.count("PATCH"))
	}

	// An object someone else created is refused, and what the plan
	// created before it found out is deleted again.
	foreign := objs(t, cm("theirs", ns, "x"))[0]
	if err := env.Client.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	before := log.count("PATCH")
	var mine []string
	for i := range 20 {
		mine = append(mine, cm(fmt.Sprintf("c%d", i), "", "3"))
	}
	p, err = e.Prepare(objs(t, append(mine, cm("theirs", "", "mine"))...), ns, apply.Owner{Name: "other", Revision: "other-1", UID: "uid-2"})
	if err != nil {
		t.Fatal(err)
	}
	cs, err = e.Apply(ctx, p, apply.ApplyOptions{Collisions: &apply.Collisions{}, Direct: true})
	if f := apply.As(err); f == nil || f.Code != apply.CodeCollision || !strings.Contains(f.Message, "ConfigMap "+ns+"/theirs") || !strings.Contains(f.Message, "nothing was applied") {
		t.Fatalf("err = %v, want Collision naming the foreign ConfigMap", err)
	}
	if n := log.count("PATCH") - before; n != 0 {
		t.Fatalf("a collision in a direct plan applied %d objects", n)
	}
	if cs != nil && len(cs.Entries) != 0 {
		t.Fatalf("a refused direct plan reports changes %v", cs.Entries)
	}
	left := &corev1.ConfigMapList{}
	if err := env.Client.List(ctx, left, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, o := range left.Items {
		if strings.HasPrefix(o.Name, "c") {
			t.Errorf("ConfigMap %s, created before the collision was found, was left", o.Name)
		}
		if o.Name == "theirs" && (o.Data["value"] != "x" || o.Labels[testKeys.OwnerName] != "") {
			t.Errorf("the foreign ConfigMap was changed: %v %v", o.Labels, o.Data)
		}
	}

	// An object of the owner's it takes before the collision is found
	// stays applied, and the refusal says so; or the collision stopped
	// the write first, and it says that nothing was applied.
	p, err = e.Prepare(objs(t, cm("a", "", "9"), cm("theirs", "", "mine")), ns, owner)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Apply(ctx, p, apply.ApplyOptions{Collisions: &apply.Collisions{}, Direct: true})
	f := apply.As(err)
	if f == nil || f.Code != apply.CodeCollision {
		t.Fatalf("err = %v, want Collision", err)
	}
	a := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, a); err != nil {
		t.Fatal(err)
	}
	if stayed := strings.Contains(f.Message, "1 object(s) written before that stay applied"); stayed != (a.Data["value"] == "9") ||
		stayed == strings.Contains(f.Message, "nothing was applied") {
		t.Fatalf("refusal %q, while ConfigMap a has value %q", f.Message, a.Data["value"])
	}

	// Content the API server refuses fails as ValidationFailed, naming it.
	p, err = e.Prepare(objs(t, "apiVersion: v1\nkind: Service\nmetadata:\n  name: broken\nspec:\n  ports:\n  - port: 99999\n"), ns, owner)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Apply(ctx, p, apply.ApplyOptions{Direct: true})
	if f := apply.As(err); f == nil || f.Code != apply.CodeRefused || !strings.Contains(f.Message, "Service "+ns+"/broken") {
		t.Fatalf("err = %v, want ValidationFailed naming the Service", err)
	}
}

// TestDirectPlansFindWhatExists: a direct plan with many objects of one
// kind in a namespace finds which exist with paged lists; one with a few
// creates them and reads only those whose create was refused. Both refuse
// a stranger's object and adopt their own alike.
func TestDirectPlansFindWhatExists(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name      string
		objects   int
		others    int // ConfigMaps of nobody's in the namespace
		wantGets  int // reads of single objects (GETs with a name)
		wantLists int
	}{
		// Created without a read; the one create refused because the
		// object exists is followed by a read of it.
		{name: "a few: a create each", objects: 10, others: 600, wantGets: 1},
		// The namespace holds 602 ConfigMaps: two pages of 500.
		{name: "many: paged lists", objects: 1200, others: 600, wantLists: 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ns := env.Namespace(t, "listed")
			e, log := countingEngine(t)
			owner := apply.Owner{Name: "bd", Revision: "bd-1", UID: "uid-1"}
			// Others' ConfigMaps, a stranger's that the plan names, and
			// one this owner wrote before.
			for i := 0; i < tt.others; i++ {
				if err := env.Client.Create(ctx, objs(t, cm(fmt.Sprintf("other-%d", i), ns, "x"))[0]); err != nil {
					t.Fatal(err)
				}
			}
			if err := env.Client.Create(ctx, objs(t, cm("theirs", ns, "x"))[0]); err != nil {
				t.Fatal(err)
			}
			p, err := e.Prepare(objs(t, cm("mine", "", "1")), ns, owner)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Apply(ctx, p, apply.ApplyOptions{Collisions: &apply.Collisions{}, Direct: true}); err != nil {
				t.Fatal(err)
			}

			var docs []string
			for i := 0; i < tt.objects-1; i++ {
				docs = append(docs, cm(fmt.Sprintf("cm-%d", i), "", "v"))
			}
			withStranger := append(slices.Clone(docs), cm("theirs", "", "mine"))
			p, err = e.Prepare(objs(t, withStranger...), ns, owner)
			if err != nil {
				t.Fatal(err)
			}
			log.reset()
			_, err = e.Apply(ctx, p, apply.ApplyOptions{Collisions: &apply.Collisions{}, Direct: true})
			if f := apply.As(err); f == nil || f.Code != apply.CodeCollision || !strings.Contains(f.Message, "ConfigMap "+ns+"/theirs") {
				t.Fatalf("err = %v, want Collision naming the stranger's ConfigMap", err)
			}
			if n := log.count("PATCH"); n != 0 {
				t.Fatalf("a collision made %d writes", n)
			}
			if gets, lists := log.count("GET one"), log.count("GET list"); gets != tt.wantGets || lists != tt.wantLists {
				t.Fatalf("%d reads and %d lists, want %d and %d", gets, lists, tt.wantGets, tt.wantLists)
			}

			withOwn := append(docs, cm("mine", "", "2"))
			p, err = e.Prepare(objs(t, withOwn...), ns, owner)
			if err != nil {
				t.Fatal(err)
			}
			cs, err := e.Apply(ctx, p, apply.ApplyOptions{Collisions: &apply.Collisions{}, Direct: true})
			if err != nil {
				t.Fatal(err)
			}
			got := actions(cs)
			if got["ConfigMap/mine"] != apply.Configured || got["ConfigMap/cm-0"] != apply.Created || len(got) != tt.objects {
				t.Fatalf("%d actions, mine %v, cm-0 %v; want %d, configured and created", len(got), got["ConfigMap/mine"], got["ConfigMap/cm-0"], tt.objects)
			}
		})
	}
}

func TestEntryHashes(t *testing.T) {
	e := newEngine(t)
	ns := "hashes"
	hash := func(owner apply.Owner, docs ...string) map[string]string {
		t.Helper()
		p, err := e.Prepare(objs(t, docs...), ns, owner)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, en := range p.Entries() {
			if len(en.Hash) != 32 {
				t.Fatalf("hash %q of %s is not 128 bits in hex", en.Hash, en.ID)
			}
			out[en.ID.Name] = en.Hash
		}
		return out
	}
	owner := apply.Owner{Name: "bd", Revision: "bd-1", UID: "uid-1"}
	first := hash(owner, cm("a", "", "1"), cm("b", "", "2"))
	tests := []struct {
		name  string
		got   map[string]string
		sameA bool
		sameB bool
		why   string
	}{
		{"same content, next revision", hash(apply.Owner{Name: "bd", Revision: "bd-2", UID: "uid-1"}, cm("a", "", "1"), cm("b", "", "2")), true, true, "the revision is not part of the object"},
		{"one object changed", hash(owner, cm("a", "", "1"), cm("b", "", "changed")), true, false, "only b changed"},
		{"another owner", hash(apply.Owner{Name: "bd", Revision: "bd-1", UID: "uid-2"}, cm("a", "", "1"), cm("b", "", "2")), false, false, "the owner UID label differs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if (tt.got["a"] == first["a"]) != tt.sameA || (tt.got["b"] == first["b"]) != tt.sameB {
				t.Fatalf("hashes %v against %v: want a same=%v, b same=%v (%s)", tt.got, first, tt.sameA, tt.sameB, tt.why)
			}
		})
	}
}

// TestCreatedObjectsUpgradeLikeApplied: an object a first install created
// (its fields set by a create, not an apply) loses, in a later revision,
// the fields that revision no longer has, as an applied one does; after
// that upgrade the engine's field manager owns its fields as an applier
// only.
func TestCreatedObjectsUpgradeLikeApplied(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "created")
	e, log := countingEngine(t)
	owner := apply.Owner{Name: "bd", Revision: "bd-1", UID: "uid-1"}
	v1 := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  labels:\n    tier: web\ndata:\n  kept: \"1\"\n  dropped: \"1\"\n"
	p, err := e.Prepare(objs(t, v1), ns, owner)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Apply(ctx, p, apply.ApplyOptions{Collisions: &apply.Collisions{}, Direct: true}); err != nil {
		t.Fatal(err)
	}
	if log.count("POST") != 1 {
		t.Fatalf("the first install made %d creates, want 1", log.count("POST"))
	}
	owned := map[inventory.ID]bool{}
	for _, id := range p.IDs() {
		owned[id.Key()] = true
	}
	v2 := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  kept: \"2\"\n"
	p, err = e.Prepare(objs(t, v2), ns, apply.Owner{Name: "bd", Revision: "bd-2", UID: "uid-1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Apply(ctx, p, apply.ApplyOptions{Collisions: &apply.Collisions{Owned: owned}}); err != nil {
		t.Fatal(err)
	}
	got := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, got); err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Data["dropped"]; ok || got.Data["kept"] != "2" || got.Labels["tier"] != "" {
		t.Fatalf("after the upgrade data = %v, labels = %v; want only kept=2 and no tier label", got.Data, got.Labels)
	}
	for _, f := range got.ManagedFields {
		if f.Manager == "rukpak-test" && f.Operation != metav1.ManagedFieldsOperationApply {
			t.Errorf("the engine's field manager still has a %s entry: %s", f.Operation, f.FieldsV1.Raw)
		}
	}

	// A first install of an object that exists and may be taken (the
	// owner's own, here) applies it after the create is refused.
	log.reset()
	p, err = e.Prepare(objs(t, v2), ns, apply.Owner{Name: "bd", Revision: "bd-2", UID: "uid-1"})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := e.Apply(ctx, p, apply.ApplyOptions{Collisions: &apply.Collisions{}, Direct: true})
	if err != nil {
		t.Fatal(err)
	}
	if a := actions(cs)["ConfigMap/app"]; a != apply.Unchanged {
		t.Fatalf("action = %v, want Unchanged", a)
	}
	if log.count("POST") != 1 || log.count("PATCH") != 1 {
		t.Fatalf("made %v, want a create refused, then an apply", log.seen)
	}
}

// TestDuplicateListEntries: an object with two entries of the same key in
// a list keyed by name (two env vars A) is created by a first install, as
// kubectl create and Helm do; server-side apply cannot merge it, so an
// upgrade that changes it fails as ValidationFailed naming the object and
// the key, not as an error retried for ever.
func TestDuplicateListEntries(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "dup")
	e := newEngine(t)
	pod := func(image string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: a\n    image: " + image +
			"\n    env:\n    - name: A\n      value: \"1\"\n    - name: A\n      value: \"2\"\n"
	}
	p, err := e.Prepare(objs(t, pod("x")), ns, apply.Owner{Name: "bd", Revision: "bd-1", UID: "uid-1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Apply(ctx, p, apply.ApplyOptions{Direct: true}); err != nil {
		t.Fatalf("first install: %v", err)
	}
	p, err = e.Prepare(objs(t, pod("y")), ns, apply.Owner{Name: "bd", Revision: "bd-2", UID: "uid-1"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Apply(ctx, p, apply.ApplyOptions{})
	if f := apply.As(err); f == nil || f.Code != apply.CodeRefused || !strings.Contains(f.Message, "Pod "+ns+"/p") || !strings.Contains(f.Message, `duplicate entries for key [name="A"]`) {
		t.Fatalf("upgrade: err = %v, want ValidationFailed naming the Pod and the duplicate key", err)
	}
	// The refusal as a value: the Pod, why, and the message the Error
	// names it with.
	want := apply.Refusal{ID: p.IDs()[0], Code: apply.CodeRefused}
	if rs := apply.As(err).Refusals; len(rs) != 1 || rs[0].ID != want.ID || rs[0].Code != want.Code || !strings.Contains(err.Error(), rs[0].Message) {
		t.Fatalf("Refusals = %+v, want one of the Pod %v, code %v, whose message the error holds", rs, want.ID, want.Code)
	}
}
