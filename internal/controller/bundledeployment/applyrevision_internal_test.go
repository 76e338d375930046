package bundledeployment

import (
	"context"
	"errors"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/inventory"
)

// fakeInventory is a revisionInventory in memory that records its saves.
type fakeInventory struct {
	ids   []inventory.ID
	saved [][]inventory.ID
}

var _ revisionInventory = (*fakeInventory)(nil)

func (f *fakeInventory) Records(context.Context, inventory.Owner) (map[inventory.ID]inventory.Record, error) {
	return nil, nil
}

func (f *fakeInventory) Load(context.Context, inventory.Owner) ([]inventory.ID, error) {
	return f.ids, nil
}

func (f *fakeInventory) Save(_ context.Context, _ inventory.Owner, ids []inventory.ID) error {
	f.saved = append(f.saved, ids)
	f.ids = ids
	return nil
}

func (f *fakeInventory) SaveApplied(ctx context.Context, owner inventory.Owner, ids []inventory.ID, _ map[inventory.ID]inventory.Record) error {
	return f.Save(ctx, owner, ids)
}

func (f *fakeInventory) Release(context.Context, inventory.Owner, []inventory.Released, []inventory.ID) (int, error) {
	return 0, nil
}

// fakeKinds serves the kinds it lists.
type fakeKinds map[string]bool

func (f fakeKinds) Serves(id inventory.ID) bool { return f[id.Kind] }

func cm(name string) inventory.ID {
	return inventory.ID{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: name}
}

func testScope() *scope {
	return &scope{bd: &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: "bd", UID: "uid-1", Generation: 2}}, mem: &remembered{}}
}

func TestRecordUnion(t *testing.T) {
	for _, tc := range []struct {
		name      string
		old       []inventory.ID
		active    string
		ids       []inventory.ID
		wantSaved [][]inventory.ID
	}{
		{name: "new object: the union is saved first", old: []inventory.ID{cm("a")}, active: "r1", ids: []inventory.ID{cm("a"), cm("b")},
			wantSaved: [][]inventory.ID{{cm("a"), cm("b")}}},
		{name: "objects dropped only: nothing saved before the apply", old: []inventory.ID{cm("a"), cm("b")}, active: "r1", ids: []inventory.ID{cm("a")}},
		{name: "the same objects: nothing saved", old: []inventory.ID{cm("a")}, active: "r1", ids: []inventory.ID{cm("a")}},
		{name: "nothing inventoried but a revision active: saved", active: "r1", ids: []inventory.ID{cm("a")},
			wantSaved: [][]inventory.ID{{cm("a")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv := &fakeInventory{ids: tc.old}
			r := &Reconciler{inv: inv}
			s := testScope()
			s.facts.active = tc.active
			old, later, err := r.recordUnion(context.Background(), s, revisionRef{bundle: "r2"}, tc.ids)
			if err != nil {
				t.Fatal(err)
			}
			if later {
				t.Error("recordLater = true for an install over an inventory or an active revision")
			}
			if !slices.Equal(old, tc.old) {
				t.Errorf("old = %v, want %v", old, tc.old)
			}
			if len(inv.saved) != len(tc.wantSaved) {
				t.Fatalf("saved %v, want %v", inv.saved, tc.wantSaved)
			}
			for i := range inv.saved {
				if !slices.Equal(inv.saved[i], tc.wantSaved[i]) {
					t.Errorf("save %d = %v, want %v", i, inv.saved[i], tc.wantSaved[i])
				}
			}
		})
	}
}

func TestSkippedNowServed(t *testing.T) {
	crd := inventory.ID{Group: "example.com", Version: "v1", Kind: "Widget", Name: "w"}
	for _, tc := range []struct {
		name        string
		skipped     []inventory.ID
		served      fakeKinds
		want        bool
		wantRequeue bool
	}{
		{name: "nothing skipped"},
		{name: "skipped, still not served", skipped: []inventory.ID{crd}, served: fakeKinds{}, wantRequeue: true},
		{name: "skipped, served now", skipped: []inventory.ID{crd}, served: fakeKinds{"Widget": true}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reconciler{kinds: tc.served}
			s := testScope()
			if got := r.skippedNowServed(s, &appliedState{skipped: tc.skipped}); got != tc.want {
				t.Errorf("skippedNowServed = %v, want %v", got, tc.want)
			}
			if got := s.requeueAfter == optionalRecheck; got != tc.wantRequeue {
				t.Errorf("requeueAfter = %v, want a requeue: %v", s.requeueAfter, tc.wantRequeue)
			}
		})
	}
}

func TestHeldBack(t *testing.T) {
	why := errors.New("boom")
	for _, tc := range []struct {
		name     string
		revision string
		mark     failedMark
		mem      *failedRevision
		retry    string
		want     bool
		wantWhy  error
	}{
		{name: "nothing failed", revision: "r1"},
		{name: "failed, from status", revision: "r1", mark: failedMark{bundle: "r1", generation: 2}, want: true},
		{name: "failed, known why", revision: "r1", mem: &failedRevision{bundle: "r1", generation: 2, err: why}, want: true, wantWhy: why},
		{name: "another revision failed", revision: "r2", mark: failedMark{bundle: "r1", generation: 2}},
		{name: "the spec changed since", revision: "r1", mark: failedMark{bundle: "r1", generation: 1}},
		{name: "retry annotation changed", revision: "r1", mark: failedMark{bundle: "r1", generation: 2}, retry: "again"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testScope()
			s.revision = tc.revision
			s.facts.failed = tc.mark
			s.mem.failed = tc.mem
			if tc.retry != "" {
				s.bd.Annotations = map[string]string{v1alpha2.AnnotationRetry: tc.retry}
			}
			held, got := markedFailed(s)
			if held != tc.want || !errors.Is(got, tc.wantWhy) {
				t.Errorf("markedFailed = %v, %v; want %v, %v", held, got, tc.want, tc.wantWhy)
			}
			if s.installErr != nil {
				t.Errorf("markedFailed set installErr %v", s.installErr)
			}
		})
	}
}

func TestRecordApplied(t *testing.T) {
	t.Run("nil", func(t *testing.T) {
		s := testScope()
		s.recordApplied(nil)
		if s.mem.applied != nil || s.reports != nil {
			t.Fatal("a nil result recorded something")
		}
	})
	t.Run("apply failed: warnings and hand-off only", func(t *testing.T) {
		s := testScope()
		s.recordApplied(&revisionResult{bundle: "r1", warnings: []string{"deprecated"}, handOffWaits: true})
		if !slices.Equal(s.warnings, []string{"deprecated"}) || !s.handOffWaits {
			t.Errorf("warnings %v, handOffWaits %v", s.warnings, s.handOffWaits)
		}
		if s.mem.applied != nil || s.reports != nil {
			t.Error("a failed apply recorded an applied state")
		}
	})
	t.Run("applied", func(t *testing.T) {
		s := testScope()
		st := &appliedState{bundle: "r1", ids: []inventory.ID{cm("a"), cm("b")}, kept: []string{"widgets.example.com"}}
		s.recordApplied(&revisionResult{bundle: "r1", state: st, kept: []keptCRD{{name: "widgets.example.com"}}})
		if s.mem.applied != st {
			t.Error("applied state not recorded")
		}
		if got := s.report("r1").objects; got != 2 {
			t.Errorf("report objects = %d, want 2", got)
		}
		if !slices.Equal(s.keptCRDs, st.kept) || !slices.Equal(s.facts.keptCRDs, []string{"widgets.example.com"}) {
			t.Errorf("kept CRDs %v, facts %v", s.keptCRDs, s.facts.keptCRDs)
		}
	})
}

func TestNextState(t *testing.T) {
	bd := &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: "bd", UID: "uid-1"}}
	same := map[inventory.ID]appliedObject{cm("same"): {hash: "h0", rv: "7"}}
	cs := &apply.ChangeSet{Entries: []apply.Change{
		{ID: cm("new"), Action: apply.Created, ResourceVersion: "1", Hash: "h1"},
		{ID: cm("changed"), Action: apply.Configured, ResourceVersion: "2", Hash: "h2"},
	}}
	st, res := nextState(bd, revisionRef{bundle: "r2", spec: "spec", digest: "dig"}, &apply.Plan{}, same, nil, cs, []string{"w"})
	if st.uid != "uid-1" || st.bundle != "r2" || st.spec != "spec" || st.digest != "dig" || !slices.Equal(st.warnings, []string{"w"}) {
		t.Errorf("state = %+v", st)
	}
	if len(st.objects) != 3 || st.objects[cm("new")].rv != "1" || st.objects[cm("same")].rv != "7" {
		t.Errorf("objects = %+v", st.objects)
	}
	if res.created != 1 || res.configured != 1 || res.unchanged != 1 || res.deleted != 0 {
		t.Errorf("counts = %+v", res)
	}
}

func TestToWrite(t *testing.T) {
	crd := crdID("widgets.example.com")
	ids := []inventory.ID{cm("a"), cm("b"), crd}
	got := toWrite(ids, map[inventory.ID]appliedObject{cm("a"): {}}, []keptCRD{{name: "widgets.example.com"}})
	if !slices.Equal(got, []inventory.ID{cm("b")}) {
		t.Errorf("toWrite = %v, want [b]", got)
	}
}
