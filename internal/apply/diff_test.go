//go:build integration

package apply_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/inventory"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// TestDryRun: a plan's objects are dry-run as Apply would write them, and
// nothing is written; those that need what the apply creates first are
// previewed as sent, saying why.
func TestDryRun(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	ns := envtest.UniqueName("dryrun")
	newNS := envtest.UniqueName("dryrun-new")
	group := envtest.UniqueName("g") + ".example.com"
	owner := apply.Owner{Name: "owner-d", Revision: "owner-d-1"}
	first, err := e.Prepare(objs(t, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+ns+"\n",
		cm("changed", ns, "1"), cm("same", ns, "1"), cm("scaled", ns, "1")), ns, owner)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Apply(ctx, first, apply.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}

	next, err := e.Prepare(objs(t, cm("changed", ns, "2"), cm("same", ns, "1"), cm("scaled", ns, "2"), cm("added", ns, "1"),
		cm("elsewhere", newNS, "1"), crd(group, "gears", "Gear"),
		"apiVersion: "+group+"/v1\nkind: Gear\nmetadata:\n  name: g\nspec:\n  size: 3\n"), ns, apply.Owner{Name: "owner-d", Revision: "owner-d-2"})
	if err != nil {
		t.Fatal(err)
	}
	// Another controller owns data.value of "scaled": kept as it is live.
	next = next.WithIgnored([]apply.IgnoreRule{{Kind: "ConfigMap", Name: "scaled", Paths: []apply.FieldPath{{"data", "value"}}}})
	previews, err := e.DryRun(ctx, next, apply.ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	value := func(u *unstructured.Unstructured) string {
		if u == nil {
			return "<absent>"
		}
		v, _, _ := unstructured.NestedString(u.Object, "data", "value")
		return v
	}
	type want struct{ live, merged, notDryRun string }
	wants := map[string]want{
		"changed":   {live: "1", merged: "2"},
		"same":      {live: "1", merged: "1"},
		"scaled":    {live: "1", merged: "1"},
		"added":     {live: "<absent>", merged: "1"},
		"elsewhere": {live: "<absent>", merged: "1", notDryRun: "namespace " + newNS + " does not exist yet"},
	}
	for _, pv := range previews {
		switch pv.ID.Kind {
		case "ConfigMap":
			w := wants[pv.ID.Name]
			if got := value(pv.Live); got != w.live {
				t.Errorf("%s: live value %q, want %q", pv.ID, got, w.live)
			}
			if got := value(pv.Merged); got != w.merged {
				t.Errorf("%s: merged value %q, want %q", pv.ID, got, w.merged)
			}
			if !strings.Contains(pv.NotDryRun, w.notDryRun) || (w.notDryRun == "") != (pv.NotDryRun == "") {
				t.Errorf("%s: NotDryRun %q, want %q", pv.ID, pv.NotDryRun, w.notDryRun)
			}
			if pv.NotDryRun == "" && pv.Merged.GetLabels()[testKeys.OwnerName] != "owner-d" {
				t.Errorf("%s: merged labels %v lack the owner", pv.ID, pv.Merged.GetLabels())
			}
			if pv.NotDryRun == "" && len(pv.Merged.GetManagedFields()) == 0 {
				t.Errorf("%s: merged has no managedFields: not the API server's answer", pv.ID)
			}
		case "Gear":
			if pv.Live != nil || !strings.Contains(pv.NotDryRun, "not served yet") {
				t.Errorf("%s: live %v, NotDryRun %q; want absent, not served yet", pv.ID, pv.Live, pv.NotDryRun)
			}
		case "CustomResourceDefinition":
			if pv.Live != nil || pv.NotDryRun != "" || pv.Merged == nil {
				t.Errorf("%s: live %v, NotDryRun %q; want absent, dry-run", pv.ID, pv.Live, pv.NotDryRun)
			}
		}
	}
	if len(previews) != 7 {
		t.Errorf("%d previews, want 7", len(previews))
	}
	// Nothing was written.
	if exists(t, "v1", "ConfigMap", ns, "added") || exists(t, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "gears."+group) {
		t.Error("DryRun created an object")
	}
	live := &unstructured.Unstructured{}
	live.SetAPIVersion("v1")
	live.SetKind("ConfigMap")
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "changed"}, live); err != nil || value(live) != "1" {
		t.Errorf("ConfigMap changed: %q, %v; want it left at 1", value(live), err)
	}
}

// TestDryRunImmutable: a change of a field that cannot change fails DryRun
// as it fails Apply, unless the object may be replaced, which is previewed
// as sent.
func TestDryRunImmutable(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	ns := envtest.UniqueName("immutable")
	secret := func(name, typ, ann string) string {
		return "apiVersion: v1\nkind: Secret\nmetadata:\n  name: " + name + "\n  annotations: {" + ann + "}\ntype: " + typ + "\n"
	}
	first, err := e.Prepare(objs(t, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+ns+"\n",
		secret("fixed", "example.com/a", ""), secret("replaced", "example.com/a", testKeys.ReplaceOnImmutable+`: "true"`)), ns, apply.Owner{Name: "o", Revision: "o-1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Apply(ctx, first, apply.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, doc, wantErr, wantNotDryRun string
	}{
		{name: "refused", doc: secret("fixed", "example.com/b", ""), wantErr: "cannot change once it exists"},
		{name: "replaced", doc: secret("replaced", "example.com/b", testKeys.ReplaceOnImmutable+`: "true"`), wantNotDryRun: "deleted and created again"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := e.Prepare(objs(t, tt.doc), ns, apply.Owner{Name: "o", Revision: "o-2"})
			if err != nil {
				t.Fatal(err)
			}
			previews, err := e.DryRun(ctx, p, apply.ApplyOptions{})
			if tt.wantErr != "" {
				if apply.CodeOf(err) != apply.CodeImmutable || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %s containing %q", err, apply.CodeImmutable, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(previews[0].NotDryRun, tt.wantNotDryRun) || previews[0].Live == nil {
				t.Fatalf("NotDryRun %q (live %v), want %q", previews[0].NotDryRun, previews[0].Live != nil, tt.wantNotDryRun)
			}
		})
	}
}

// TestPrunable: what Prune would delete, as it is; CRDs and objects to
// keep are listed apart; objects gone or someone else's are left out.
func TestPrunable(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	ns := envtest.UniqueName("prunable")
	group := envtest.UniqueName("g") + ".example.com"
	p, err := e.Prepare(objs(t, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+ns+"\n",
		crd(group, "bolts", "Bolt"), cm("mine", ns, "1"), cm("kept", ns, "1"), cm("taken", ns, "1")), ns, apply.Owner{Name: "owner-p", Revision: "owner-p-1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Apply(ctx, p, apply.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	taken, err := e.Prepare(objs(t, cm("taken", ns, "2")), ns, apply.Owner{Name: "owner-q", Revision: "owner-q-1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Apply(ctx, taken, apply.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	ids := append(p.IDs()[1:], inventory.ID{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "gone"})
	keep := func(id inventory.ID) bool { return id.Name == "kept" }
	gone, kept, err := e.Prunable(ctx, "owner-p", ids, apply.PruneOptions{Keep: keep})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, obj := range gone {
		names = append(names, obj.GetKind()+"/"+obj.GetName())
	}
	if strings.Join(names, ",") != "ConfigMap/mine" {
		t.Errorf("prunable = %v, want ConfigMap/mine", names)
	}
	var keptNames []string
	for _, id := range kept {
		keptNames = append(keptNames, id.Kind+"/"+id.Name)
	}
	if strings.Join(keptNames, ",") != "CustomResourceDefinition/bolts."+group+",ConfigMap/kept" {
		t.Errorf("kept = %v", keptNames)
	}
	if gone, _, err = e.Prunable(ctx, "owner-p", p.IDs()[1:2], apply.PruneOptions{DeleteCRDs: true}); err != nil || len(gone) != 1 {
		t.Errorf("with DeleteCRDs: %d prunable, %v; want the CRD", len(gone), err)
	}
	if !exists(t, "v1", "ConfigMap", ns, "mine") {
		t.Error("Prunable deleted an object")
	}
}

// TestDryRunHooks: hooks are previewed only when Apply would run them,
// and say that they are hooks.
func TestDryRunHooks(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	ns := envtest.UniqueName("dryrun-hooks")
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	hook := func(name, events string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  annotations: {helm.sh/hook: " + events + "}\n"
	}
	docs := []string{cm("plain", ns, "1"), hook("on-install", "pre-install"), hook("on-upgrade", "post-upgrade")}
	for _, tt := range []struct {
		name string
		run  apply.HookRun
		want string
	}{
		{name: "no hooks", run: apply.HooksNone, want: "plain"},
		{name: "install hooks", run: apply.HooksInstall, want: "plain,on-install(hook)"},
		{name: "upgrade hooks", run: apply.HooksUpgrade, want: "plain,on-upgrade(hook)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := e.Prepare(objs(t, docs...), ns, apply.Owner{Name: "o", Revision: "o-1"})
			if err != nil {
				t.Fatal(err)
			}
			previews, err := e.DryRun(ctx, p, apply.ApplyOptions{Hooks: tt.run})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, pv := range previews {
				name := pv.ID.Name
				if pv.Hook {
					name += "(hook)"
				}
				got = append(got, name)
			}
			if strings.Join(got, ",") != tt.want {
				t.Errorf("previewed %v, want %s", got, tt.want)
			}
		})
	}
}
