package review

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestBounds checks that every list keeps its first entries with an
// exact count, and that strings are cut.
func TestBounds(t *testing.T) {
	const n = MaxEntries + 10
	var next, users, resources, data, oldData []string
	for i := range n {
		next = append(next, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%02d}\n", i))
		users = append(users, fmt.Sprintf("{kind: User, name: user-%02d}", i))
	}
	for i := range MaxRuleItems + 4 {
		resources = append(resources, fmt.Sprintf("r%02d", i))
	}
	for i := range MaxPaths + 4 {
		data = append(data, fmt.Sprintf("k%02d: new", i))
		oldData = append(oldData, fmt.Sprintf("k%02d: old", i))
	}
	long := strings.Repeat("é", 200) // 400 bytes
	wide := fmt.Sprintf("{apiGroups: [\"\"], resources: [%s], verbs: [get]}", strings.Join(resources, ", "))
	active := objs(t, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: many-keys}\ndata: {%s}\n", strings.Join(oldData, ", ")))
	next = append(next,
		clusterRole("wide", "", wide),
		clusterBinding("wide", "wide", users...),
		fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: many-keys}\ndata: {%s}\n", strings.Join(data, ", ")),
		fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %q}\n", "ns-"+long),
	)
	r := compute(t, active, objs(t, next...), nil)

	o := r.Objects
	if o.AddedCount != n+3 || len(o.Added) != MaxEntries {
		t.Errorf("added: count %d, %d kept; want %d, %d", o.AddedCount, len(o.Added), n+3, MaxEntries)
	}
	if len(o.Changed) != 1 || o.Changed[0].PathCount != MaxPaths+4 || len(o.Changed[0].Paths) != MaxPaths {
		t.Errorf("changed = %+v, want one with %d paths, %d kept", o.Changed, MaxPaths+4, MaxPaths)
	}
	rb := r.RBAC
	if rb.GainedCount != n || len(rb.Gained) != MaxEntries || rb.SubjectCount != n {
		t.Errorf("gained: count %d, %d kept, %d subjects; want %d, %d, %d", rb.GainedCount, len(rb.Gained), rb.SubjectCount, n, MaxEntries, n)
	}
	if g := rb.Gained[0].Rule; !g.Truncated || len(g.Resources) != MaxRuleItems {
		t.Errorf("a rule of %d resources = %+v, want %d kept and truncated", MaxRuleItems+4, g, MaxRuleItems)
	}
	s := r.APISurface
	if s.NamespaceCount != 1 || len(s.Namespaces[0]) > maxShort || !utf8.ValidString(s.Namespaces[0]) || !strings.HasSuffix(s.Namespaces[0], ellipsis) {
		t.Errorf("namespaces = %q, want one cut to %d bytes", s.Namespaces, maxShort)
	}
	if s.ClusterScopedCount != 3 {
		t.Errorf("cluster-scoped count = %d, want 3", s.ClusterScopedCount)
	}
	if len(r.Summary) > maxSummary || !strings.Contains(r.Summary, "more") || !r.GrowsPower {
		t.Errorf("summary (%d bytes) = %q, want at most %d ending in 'and N more'", len(r.Summary), r.Summary, maxSummary)
	}
}

// TestDetailsBound checks that a webhook's details are cut with "and N
// more".
func TestDetailsBound(t *testing.T) {
	var rules []string
	for i := range MaxDetails + 2 {
		rules = append(rules, fmt.Sprintf("{operations: [CREATE], apiGroups: [g%02d.example.com], apiVersions: [v1], resources: [things]}", i))
	}
	r := compute(t, nil, objs(t, webhookYAML("MutatingWebhookConfiguration", strings.Join(rules, ", "))), nil)
	d := r.APISurface.Webhooks[0].Details
	// MaxDetails+2 rules, failurePolicy, two selectors, endpoint.
	want := fmt.Sprintf("and %d more", MaxDetails+2+4-(MaxDetails-1))
	if len(d) != MaxDetails || d[len(d)-1] != want {
		t.Errorf("details = %q, want %d ending in %q", d, MaxDetails, want)
	}
}

// TestJoinBounded checks the summary's cut.
func TestJoinBounded(t *testing.T) {
	tests := []struct {
		items []string
		n     int
		want  string
	}{
		{nil, 20, ""},
		{[]string{"aaaa", "bbbb"}, 20, "aaaa; bbbb"},
		{[]string{"aaaa", "bbbb", "cccc"}, 20, "aaaa; and 2 more"},
		{[]string{"aaaaaaaaaaaaaaaaaaaaaaaaa"}, 10, "aaaaaaa" + ellipsis},
	}
	for _, tt := range tests {
		if got := joinBounded(tt.items, tt.n); got != tt.want || len(got) > tt.n {
			t.Errorf("joinBounded(%q, %d) = %q, want %q", tt.items, tt.n, got, tt.want)
		}
	}
}

// TestTooManyAtoms checks that rules expanding past MaxAtoms fail the
// review instead of growing without bound.
func TestTooManyAtoms(t *testing.T) {
	defer func(n int) { atomLimit = n }(atomLimit)
	atomLimit = 1000
	var names, resources []string
	for i := range 100 {
		names = append(names, fmt.Sprintf("n%d", i))
	}
	for i := range atomLimit/100 + 1 {
		resources = append(resources, fmt.Sprintf("r%d", i))
	}
	huge := fmt.Sprintf("{apiGroups: [\"\"], resources: [%s], resourceNames: [%s], verbs: [get]}", strings.Join(resources, ","), strings.Join(names, ","))
	_, err := Compute(context.Background(), Input{New: objs(t, clusterRole("huge", "", huge), clusterBinding("huge", "huge", saOp)), Mapper: testMapper()})
	var tooLarge *TooLargeError
	if !errors.As(err, &tooLarge) {
		t.Fatalf("Compute() error = %v, want a *TooLargeError", err)
	}
}

// TestUnknownKind checks that a kind neither the cluster nor a CRD of the
// revisions knows fails the review, naming it.
func TestUnknownKind(t *testing.T) {
	_, err := Compute(context.Background(), Input{
		New:    objs(t, "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g}\n", crdYAML("Namespaced", "v1:true")),
		Mapper: testMapper(),
	})
	if err == nil || !strings.Contains(err.Error(), "kind example.com/v1, Kind=Gadget is neither served by the cluster nor defined by a CRD") {
		t.Fatalf("Compute() error = %v, want one naming the kind", err)
	}
	// A kind of a CRD the revision ships is known, and namespaced.
	r, err := Compute(context.Background(), Input{
		New:              objs(t, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n", crdYAML("Namespaced", "v1:true")),
		Mapper:           testMapper(),
		InstallNamespace: "op",
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := ref(r.Objects.Added[0]); got != "Widget.example.com op/w" {
		t.Errorf("added[0] = %s, want Widget.example.com op/w", got)
	}
}
