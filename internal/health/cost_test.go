package health

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// legitimateProbes are probes of the kind the documentation, examples and
// tests use; the cost estimate must let every one of them through.
var legitimateProbes = []string{
	"self.status.?readyReplicas.orValue(0) >= 2", // docs/lifecycle.md
	`self.data.ready == "true"`,                  // the controller's tests
	"self.status.readyReplicas == self.spec.replicas",
	"self.status.phase == 'Running'",
	"self.status.phase.lowerAscii() == 'running'",
	"size(self.status.endpoints) > 2",
	"self.status.replicas >= self.spec.size + 1",
	"self.metadata.labels['app'] == 'web'",
	"self.metadata.name.startsWith('web-')",
	"!has(self.status.ready)",
	"self.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
	"self.status.?conditions.orValue([]).exists(c, c.type == 'Available' && c.status == 'True')",
	"self.spec.template.spec.containers.all(c, c.image.endsWith(':v2'))",
	"self.status.phase.matches('^(Running|Succeeded)$')",
	"self.data.a + self.data.b == 'ab'",
	"'%s/%s'.format([self.metadata.namespace, self.metadata.name]) == 'ns/w'",
}

func TestCostEstimateAllowsLegitimateProbes(t *testing.T) {
	for _, expr := range legitimateProbes {
		t.Run(expr, func(t *testing.T) {
			if _, err := NewChecker([]v1alpha2.Probe{probe("", "ConfigMap", expr)}); err != nil {
				t.Fatalf("NewChecker: %v", err)
			}
		})
	}
}

func TestCostEstimateRefusesExpensiveProbes(t *testing.T) {
	tests := []struct {
		name string
		expr string
		// cost is the estimate the message must state; 0 skips the check.
		cost uint64
	}{
		{
			// The verified attack of issue 12: with a 900 kB value it
			// asked for ~800 GB and the manager died.
			name: "replace by itself",
			expr: "self.data.x.replace('a', self.data.x) == ''",
			cost: 618476942136,
		},
		{name: "replace with a constant grows a string",
			expr: "self.data.x.replace('a', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa').replace('a', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa') == ''"},
		{name: "nested comprehensions", expr: "self.spec.list.all(a, self.spec.list.all(b, a != b))"},
		{name: "three nested comprehensions", expr: "self.spec.list.all(a, self.spec.list.all(b, self.spec.list.all(c, true)))"},
		{name: "concatenation in a comprehension", expr: "self.spec.list.map(a, self.spec.big + self.spec.big).size() > 0"},
		{name: "repeated concatenation", expr: "self.spec.list.exists(a, (self.spec.big + self.spec.big + self.spec.big).contains('x'))"},
		{name: "joined copies", expr: "self.spec.list.map(a, self.spec.big).join(self.spec.big) == ''"},
		{name: "split then scan", expr: "self.data.x.split('').exists(c, self.data.x.contains(c))"},
		{name: "string search in a comprehension", expr: "self.spec.containers.all(c, c.image.contains(':'))"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := probe("", "ConfigMap", tt.expr)
			p.Selector.Name = "big"
			c, err := NewChecker([]v1alpha2.Probe{probe("", "ConfigMap", "true"), p})
			if err == nil {
				t.Fatalf("NewChecker() = %v, want the probe refused", c)
			}
			f := failure.As(err)
			if f == nil || f.Reason != v1alpha2.ReasonProbeTooExpensive {
				t.Fatalf("error %v is not a failure with reason %s", err, v1alpha2.ReasonProbeTooExpensive)
			}
			msg := err.Error()
			for _, want := range []string{
				"health probe 1 (ConfigMap big): ",
				fmt.Sprintf("%q", shorten(tt.expr, maxShownExpression)),
				"has an estimated worst-case cost of ",
				"on objects of up to 1.5 MiB, more than the limit of 10000000",
			} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not contain %q", msg, want)
				}
			}
			if tt.cost != 0 && !strings.Contains(msg, fmt.Sprintf("cost of %d (", tt.cost)) {
				t.Errorf("message %q does not state the estimate %d", msg, tt.cost)
			}
		})
	}
}

func TestFormatCost(t *testing.T) {
	for _, tt := range []struct {
		cost uint64
		want string
	}{
		{25_000_000, "25000000 (3x the limit)"},
		{math.MaxUint64, "unbounded"},
	} {
		if got := formatCost(tt.cost); got != tt.want {
			t.Errorf("formatCost(%d) = %q, want %q", tt.cost, got, tt.want)
		}
	}
}

// TestSizeGuard checks the run-time bound on what one call may build, with
// the estimate lifted so that the expressions run at all: each must fail
// with the guard's message without allocating what it asked for.
func TestSizeGuard(t *testing.T) {
	defer func(l uint64) { estimatedCostLimit = l }(estimatedCostLimit)
	estimatedCostLimit = math.MaxUint64

	cm := parse(t, `
		apiVersion: v1
		kind: ConfigMap
		metadata: {name: big, namespace: ns}
	`)
	x := strings.Repeat("a", 900_000)
	many := make([]any, 400_000)
	for i := range many {
		many[i] = int64(i)
	}
	cm.Object["data"] = map[string]any{"x": x, "small": "abc"}
	cm.Object["spec"] = map[string]any{"many": many}

	tests := []struct {
		name    string
		expr    string
		healthy bool
		reason  string
	}{
		{"replace by itself", "self.data.x.replace('a', self.data.x) == ''", false,
			"probe 0: replace() would build a string of 810000000000 bytes, more than the limit of 3145728"},
		{"replace with a limit", "self.data.x.replace('a', self.data.x, 2) == ''", false, "is false"},
		{"replace that shrinks", "self.data.x.replace('a', '') == ''", true, ""},
		{"dynamic concatenation", "self.data.x + self.data.x + self.data.x + self.data.x == ''", false,
			"probe 0: + would build a string of 3600000 bytes, more than the limit of 3145728"},
		{"resolved concatenation", "string(self.data.x) + string(self.data.x) + string(self.data.x) + string(self.data.x) == ''", false,
			"probe 0: + would build a string of 3600000 bytes"},
		{"concatenation within the limit", "size(self.data.x + self.data.x) == 1800000", true, ""},
		{"list concatenation", "size(self.spec.many + self.spec.many) > 0", false,
			"probe 0: + would build a list of 800000 entries, more than the limit of 786432"},
		{"join", "[self.data.x, self.data.x, self.data.x, self.data.x].join('') == ''", false,
			"probe 0: join() would build a string of 3600000 bytes"},
		{"join with a separator", "[self.data.small, self.data.small, self.data.small].join(self.data.x + self.data.x) == ''", false,
			"probe 0: join() would build a string of 3600009 bytes"},
		{"format", "'%s%s'.format([self.data.x, self.data.x]) == ''", false,
			"probe 0: format() would build a string of up to 3600004 bytes"},
		{"format in a list", "'%s'.format([[self.data.x, self.data.x]]) == ''", false,
			"probe 0: format() would build a string of up to 5400012 bytes"},
		{"quote", "strings.quote(self.data.x + self.data.x) == ''", false,
			"probe 0: strings.quote() would build a string of up to 5400002 bytes"},
		{"split", "self.data.x.split('').size() > 0", false,
			"probe 0: split() would build a list of 900000 entries, more than the limit of 786432"},
		{"split with a limit", "self.data.x.split('', 3).size() == 3", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewChecker([]v1alpha2.Probe{probe("", "ConfigMap", tt.expr)})
			if err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			got := c.Check(cm)
			runtime.ReadMemStats(&after)
			if got.Healthy != tt.healthy || !strings.Contains(got.Reason, tt.reason) || (tt.reason == "" && got.Reason != "") {
				t.Fatalf("Check() = %+v, want healthy=%v reason containing %q", got, tt.healthy, tt.reason)
			}
			// The largest value a call may build is 3 MiB; a few copies
			// of it and of the inputs are all an evaluation may allocate.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
				t.Errorf("Check allocated %d MiB", alloc>>20)
			}
		})
	}
}
