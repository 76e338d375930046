package bundledeployment

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Which CRDs a rollback keeps at their newer definition, and when it must
// not be made at all, without a cluster.
func TestDecideCRDRollback(t *testing.T) {
	widget := schema.GroupKind{Group: "example.com", Kind: "Widget"}
	gadget := schema.GroupKind{Group: "example.com", Kind: "Gadget"}
	v1Only := crdRollbackCase{name: "widgets.example.com", gk: widget, liveServed: []string{"v1"}, stored: []string{"v1"}, earlierServed: []string{"v1"}}
	addedV2 := crdRollbackCase{name: "widgets.example.com", gk: widget, liveServed: []string{"v1", "v2"}, stored: []string{"v1", "v2"}, earlierServed: []string{"v1"}}
	v2OnlyLive := crdRollbackCase{name: "widgets.example.com", gk: widget, liveServed: []string{"v2"}, stored: []string{"v2"}, earlierServed: []string{"v1"}}
	tests := []struct {
		name     string
		cases    []crdRollbackCase
		objects  []schema.GroupVersionKind
		wantKeep []string
		// wantUnsafe is a substring of the reason the rollback is refused;
		// "" when it is made.
		wantUnsafe string
	}{
		{name: "no CRDs", objects: []schema.GroupVersionKind{{Version: "v1", Kind: "ConfigMap"}}},
		{name: "earlier definition serves every stored version", cases: []crdRollbackCase{v1Only}},
		{name: "stored version the earlier definition lacks: kept", cases: []crdRollbackCase{addedV2}, wantKeep: []string{"widgets.example.com"}},
		{
			name:     "stored version the earlier definition has but does not serve: kept",
			cases:    []crdRollbackCase{{name: "widgets.example.com", gk: widget, liveServed: []string{"v1", "v2"}, stored: []string{"v2"}, earlierServed: []string{"v1"}}},
			wantKeep: []string{"widgets.example.com"},
		},
		{
			name:     "earlier definition would drop stored data: kept",
			cases:    []crdRollbackCase{{name: "widgets.example.com", gk: widget, liveServed: []string{"v1"}, stored: []string{"v1"}, earlierServed: []string{"v1"}, unsafe: "CRD widgets.example.com: [Pruned:v1:.spec.size]"}},
			wantKeep: []string{"widgets.example.com"},
		},
		{
			name:     "earlier custom resources at a version the kept CRD serves",
			cases:    []crdRollbackCase{addedV2},
			objects:  []schema.GroupVersionKind{{Group: "example.com", Version: "v1", Kind: "Widget"}},
			wantKeep: []string{"widgets.example.com"},
		},
		{
			name:       "earlier custom resources at a version the kept CRD no longer serves: unsafe",
			cases:      []crdRollbackCase{v2OnlyLive},
			objects:    []schema.GroupVersionKind{{Group: "example.com", Version: "v1", Kind: "Widget"}},
			wantKeep:   []string{"widgets.example.com"},
			wantUnsafe: "widgets.example.com must keep its newer definition (stored versions v2), which does not serve v1",
		},
		{
			name:    "custom resources of a CRD that is not kept",
			cases:   []crdRollbackCase{addedV2, {name: "gadgets.example.com", gk: gadget, liveServed: []string{"v2"}, stored: []string{"v1"}, earlierServed: []string{"v1"}}},
			objects: []schema.GroupVersionKind{{Group: "example.com", Version: "v1", Kind: "Gadget"}},
			// gadgets' earlier definition serves v1 and is applied.
			wantKeep: []string{"widgets.example.com"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decideCRDRollback(tt.cases, tt.objects)
			var names []string
			for _, k := range got.keep {
				names = append(names, k.name)
				if !strings.Contains(k.String(), "stored versions") {
					t.Errorf("kept %q does not name the stored versions", k)
				}
			}
			if !slices.Equal(names, tt.wantKeep) {
				t.Errorf("kept %v, want %v", names, tt.wantKeep)
			}
			msg := strings.Join(got.unsafe, "; ")
			if (tt.wantUnsafe == "") != (msg == "") || !strings.Contains(msg, tt.wantUnsafe) {
				t.Errorf("unsafe %q, want %q", msg, tt.wantUnsafe)
			}
		})
	}
}
