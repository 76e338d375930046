package review

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// list returns n names: prefix0, prefix1, ...
func list(prefix string, n int) string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return strings.Join(out, ", ")
}

// wideRule returns a rule of verbs × groups × resources × names atoms
// (no resourceNames when names is 0).
func wideRule(verbs, groups, resources, names int) string {
	s := fmt.Sprintf("{verbs: [%s], apiGroups: [%s], resources: [%s]", list("v", verbs), list("g", groups), list("r", resources))
	if names > 0 {
		s += fmt.Sprintf(", resourceNames: [%s]", list("n", names))
	}
	return s + "}"
}

// TestCostEstimate checks the estimate made before anything is expanded:
// a revision over MaxAtoms is refused naming its largest rule, one under
// it is reviewed, and what the estimate cannot see (a live ClusterRole
// aggregated) is still stopped at the limit while expanding.
func TestCostEstimate(t *testing.T) {
	tests := []struct {
		name   string
		active []string
		next   []string
		live   []string
		// want is what the error says; "" for none. estimated says the
		// estimate refused it (else the limit while expanding).
		want      []string
		estimated bool
	}{
		{
			name:      "the 1.5 KB rule of 476,160 atoms",
			next:      []string{role("op", "big", wideRule(8, 64, 30, 31)), binding("op", "big", "Role", "big", saOp)},
			want:      []string{"about 952320 atoms", "over the 32768 a review may hold", "Role op/big rules[0]: 8 verbs × 64 apiGroups × 30 resources × 31 resourceNames = 476160 atoms"},
			estimated: true,
		},
		{
			name:      "a role under the limit bound to many subjects",
			next:      []string{clusterRole("wide", "", wideRule(4, 8, 8, 40)), clusterBinding("wide", "wide", saOp, saOther, alice)},
			want:      []string{"about 40960 atoms", "ClusterRole wide rules[0]: 4 verbs × 8 apiGroups × 8 resources × 40 resourceNames = 10240 atoms"},
			estimated: true,
		},
		{
			name:   "the active revision counts too",
			active: []string{clusterRole("wide", "", wideRule(4, 8, 8, 128))},
			next:   []string{clusterRole("wide", "", wideRule(4, 8, 8, 1))},
			want:   []string{"about 33024 atoms"}, estimated: true,
		},
		{
			name: "a ClusterServiceVersion's permissions",
			next: []string{"apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata: {name: op.v1, namespace: op}\nspec:\n  install:\n    spec:\n      clusterPermissions:\n      - serviceAccountName: op\n        rules: [" + wideRule(8, 64, 30, 31) + "]\n"},
			want: []string{"ClusterServiceVersion op/op.v1 spec.install.spec.clusterPermissions[0].rules[0]"}, estimated: true,
		},
		{
			name: "under the limit",
			next: []string{clusterRole("wide", "", wideRule(4, 8, 8, 63)), clusterBinding("wide", "wide", saOp)},
		},
		{
			name: "live aggregating ClusterRoles that select nothing of the revisions are not expanded",
			next: []string{role("op", "small", wideRule(1, 1, 1, 0)), binding("op", "small", "Role", "small", saOp)},
			live: []string{aggregating("admin-like", "agg=yes"), clusterRole("live", "agg=yes", wideRule(4, 8, 8, 64))},
		},
		{
			name: "a live ClusterRole aggregated, which the estimate does not see",
			next: []string{aggregating("agg", "agg=yes"), clusterBinding("agg", "agg", saOp, saOther, alice)},
			live: []string{clusterRole("live", "agg=yes", wideRule(4, 8, 8, 64))},
			want: []string{"than a review may hold (32768)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compute(context.Background(), Input{
				Active: objs(t, tt.active...), New: objs(t, tt.next...), InstallNamespace: "op",
				Mapper: testMapper(), Live: &fakeLive{objs: objs(t, tt.live...)},
			})
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Compute() error = %v, want none", err)
				}
				return
			}
			var tooLarge *TooLargeError
			if !errors.As(err, &tooLarge) {
				t.Fatalf("Compute() error = %v, want a *TooLargeError", err)
			}
			if (tooLarge.Estimated > 0) != tt.estimated {
				t.Errorf("estimated %d, want refused by the estimate: %v", tooLarge.Estimated, tt.estimated)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestReviewCostAtTheLimit measures what the costliest review under the
// limit allocates: one rule of just under MaxAtoms atoms, bound to one
// subject, against an active revision without it. Everything it
// allocates is an upper bound of what it holds at once.
func TestReviewCostAtTheLimit(t *testing.T) {
	// 4 × 8 × 8 × 63 = 16,128 atoms for the role, as many for its
	// subject: 32,256 of 32,768.
	next := objs(t, clusterRole("wide", "", wideRule(4, 8, 8, 63)), clusterBinding("wide", "wide", saOp))
	in := Input{New: next, InstallNamespace: "op", Mapper: testMapper()}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r, err := Compute(context.Background(), in)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if !r.GrowsPower {
		t.Error("the review does not grow power")
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("a review of 32,256 atoms allocates %.1f MiB in all", float64(allocated)/(1<<20))
	if allocated > 64<<20 {
		t.Errorf("a review at the limit allocates %.1f MiB, over 64 MiB", float64(allocated)/(1<<20))
	}
}
