package health

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// probe returns a probe of group/kind with expression expr.
func probe(group, kind, expr string) v1alpha2.Probe {
	return v1alpha2.Probe{Selector: v1alpha2.ProbeSelector{Group: group, Kind: kind}, CEL: expr}
}

func TestNewCheckerRejects(t *testing.T) {
	tests := []struct {
		name   string
		probes []v1alpha2.Probe
		want   string
	}{
		{"syntax error", []v1alpha2.Probe{probe("", "ConfigMap", "self.data.a ==")}, "health probe 0: compiling"},
		{"unknown variable", []v1alpha2.Probe{probe("", "ConfigMap", "true"), probe("", "ConfigMap", "other.x == 1")}, "health probe 1: compiling"},
		{"returns int", []v1alpha2.Probe{probe("", "ConfigMap", "size(self.data)")}, "health probe 0: expression \"size(self.data)\" returns int, want bool"},
		{"returns string", []v1alpha2.Probe{probe("", "ConfigMap", `"yes"`)}, "returns string, want bool"},
		{"type error", []v1alpha2.Probe{probe("", "ConfigMap", `1 + "a" == 2`)}, "health probe 0: compiling"},
		{"missing kind", []v1alpha2.Probe{probe("", "", "true")}, "health probe 0: selector.kind is required"},
		{"too long", []v1alpha2.Probe{probe("", "ConfigMap", strings.Repeat(" ", maxExpressionLength)+"true")}, "longer than 4096"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewChecker(tt.probes)
			if err == nil {
				t.Fatalf("NewChecker() = %v, want an error", c)
			}
			f := failure.As(err)
			if f == nil || f.Reason != v1alpha2.ReasonInvalidConfig {
				t.Fatalf("error %v is not a failure with reason %s", err, v1alpha2.ReasonInvalidConfig)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

// widget is a custom resource whose kind has no built-in probe and no
// conditions, so only user probes decide its health.
const widget = `
	apiVersion: example.com/v1
	kind: Widget
	metadata:
	  name: w
	  namespace: ns
	  labels: {tier: backend, team: a}
	spec: {size: 3}
	status: {phase: Running, replicas: 3, endpoints: [a, b]}
`

func TestUserProbes(t *testing.T) {
	named := probe("example.com", "Widget", "false")
	named.Selector.Name = "other"
	labelled := probe("example.com", "Widget", "self.status.phase == 'Running'")
	labelled.Selector.MatchLabels = map[string]string{"tier": "backend"}
	labelMismatch := probe("example.com", "Widget", "false")
	labelMismatch.Selector.MatchLabels = map[string]string{"tier": "frontend"}
	withMessage := probe("example.com", "Widget", "self.status.replicas >= self.spec.size + 1")
	withMessage.Message = "widget is not scaled up"
	byName := probe("example.com", "Widget", "self.metadata.name == 'w'")
	byName.Selector.Name = "w"

	tests := []struct {
		name    string
		probes  []v1alpha2.Probe
		healthy bool
		reason  string
	}{
		{"true", []v1alpha2.Probe{probe("example.com", "Widget", "self.status.phase == 'Running'")}, true, ""},
		{"matched by name", []v1alpha2.Probe{byName}, true, ""},
		{"matched by labels", []v1alpha2.Probe{labelled}, true, ""},
		{"other kind is not evaluated", []v1alpha2.Probe{probe("example.com", "Gadget", "false")}, true, ""},
		{"other group is not evaluated", []v1alpha2.Probe{probe("other.com", "Widget", "false")}, true, ""},
		{"other name is not evaluated", []v1alpha2.Probe{named}, true, ""},
		{"other labels are not evaluated", []v1alpha2.Probe{labelMismatch}, true, ""},
		{"false with message", []v1alpha2.Probe{withMessage}, false, "widget is not scaled up"},
		{"false without message", []v1alpha2.Probe{probe("example.com", "Widget", "size(self.status.endpoints) > 2")}, false, "probe 0: size(self.status.endpoints) > 2 is false"},
		{"first failure wins", []v1alpha2.Probe{
			probe("example.com", "Widget", "true"),
			probe("example.com", "Widget", "self.spec.size == 4"),
			withMessage,
		}, false, "probe 1: self.spec.size == 4 is false"},
		{"missing key", []v1alpha2.Probe{probe("example.com", "Widget", "self.status.ready")}, false, "probe 0: no such key: ready"},
		{"optional field", []v1alpha2.Probe{probe("example.com", "Widget", "self.?status.?ready.orValue(true)")}, true, ""},
		{"has macro", []v1alpha2.Probe{probe("example.com", "Widget", "!has(self.status.ready)")}, true, ""},
		{"string extension", []v1alpha2.Probe{probe("example.com", "Widget", "self.status.phase.lowerAscii() == 'running'")}, true, ""},
		{"dynamic non-bool result", []v1alpha2.Probe{probe("example.com", "Widget", "self.status.phase")}, false, "probe 0: expression returned string, want bool"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewChecker(tt.probes)
			if err != nil {
				t.Fatalf("NewChecker: %v", err)
			}
			got := c.Check(parse(t, widget))
			if got.Healthy != tt.healthy || !strings.Contains(got.Reason, tt.reason) || (tt.reason == "" && got.Reason != "") {
				t.Fatalf("Check() = %+v, want healthy=%v reason containing %q", got, tt.healthy, tt.reason)
			}
		})
	}
}

// bigWidget is widget with a 1000-element list, a 400,000-element list
// and a 100 kB string, for expressions that cost a lot.
func bigWidget(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	obj := parse(t, widget)
	list := make([]any, 1000)
	for i := range list {
		list[i] = int64(i)
	}
	many := make([]any, 400_000)
	for i := range many {
		many[i] = int64(i)
	}
	spec := obj.Object["spec"].(map[string]any)
	spec["list"] = list
	spec["many"] = many
	spec["big"] = strings.Repeat("x", 100_000)
	return obj
}

func TestProbeLimits(t *testing.T) {
	tests := []struct {
		name    string
		expr    string
		timeout time.Duration
		reason  string
	}{
		{
			// Linear in the list, so the estimate lets it through (about
			// 5.5 million on the largest list an object can hold); on
			// 400,000 entries it costs about 2.8 million, over the
			// limit of one evaluation.
			name:    "cost limit",
			expr:    "self.spec.many.all(a, a >= 0 && a < 10000000)",
			timeout: time.Minute,
			reason:  "probe 0: operation cancelled: actual cost limit exceeded",
		},
		{
			// Cheap enough for both limits, so the deadline, made as
			// short as can be, is what stops it.
			name:    "deadline",
			expr:    "self.spec.list.all(a, true)",
			timeout: time.Nanosecond,
			reason:  "probe 0: operation interrupted: context deadline exceeded",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func(d time.Duration) { evalTimeout = d }(evalTimeout)
			evalTimeout = tt.timeout
			c, err := NewChecker([]v1alpha2.Probe{probe("example.com", "Widget", tt.expr)})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			got := c.Check(bigWidget(t))
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("Check took %v", d)
			}
			if got.Healthy || got.Reason != tt.reason {
				t.Fatalf("Check() = %+v, want reason %q", got, tt.reason)
			}
		})
	}
}

func TestUserProbesAddToBuiltins(t *testing.T) {
	c, err := NewChecker([]v1alpha2.Probe{{
		Selector: v1alpha2.ProbeSelector{Group: "apps", Kind: "Deployment"},
		CEL:      "self.status.readyReplicas == self.spec.replicas",
		Message:  "not all replicas ready",
	}})
	if err != nil {
		t.Fatal(err)
	}
	runCases(t, c, []checkCase{
		{
			name: "built-in fails first",
			manifest: `
				apiVersion: apps/v1
				kind: Deployment
				metadata: {name: web, namespace: ns, generation: 2}
				spec: {replicas: 3}
				status: {observedGeneration: 1}
			`,
			reason: "rollout of generation 2 not observed",
		},
		{
			name: "built-in passes, probe fails",
			manifest: `
				apiVersion: apps/v1
				kind: Deployment
				metadata: {name: web, namespace: ns, generation: 2}
				spec: {replicas: 3}
				status: {observedGeneration: 2, replicas: 3, updatedReplicas: 3, availableReplicas: 3, readyReplicas: 2}
			`,
			reason: "not all replicas ready",
		},
		{
			name: "both pass",
			manifest: `
				apiVersion: apps/v1
				kind: Deployment
				metadata: {name: web, namespace: ns, generation: 2}
				spec: {replicas: 3}
				status: {observedGeneration: 2, replicas: 3, updatedReplicas: 3, availableReplicas: 3, readyReplicas: 3}
			`,
			healthy: true,
		},
	})
}

func TestCheckerConcurrent(t *testing.T) {
	c, err := NewChecker([]v1alpha2.Probe{probe("example.com", "Widget", "self.status.replicas == self.spec.size")})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			obj := parse(t, widget)
			obj.Object["spec"].(map[string]any)["size"] = int64(i % 4)
			want := i%4 == 3
			if got := c.Check(obj); got.Healthy != want {
				t.Errorf("size %d: Check() = %+v, want healthy=%v", i%4, got, want)
			}
		})
	}
	wg.Wait()
}

func TestCache(t *testing.T) {
	cache := NewCache(2)
	a := []v1alpha2.Probe{probe("", "ConfigMap", "true")}
	c1, err := cache.Checker(a)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := cache.Checker([]v1alpha2.Probe{probe("", "ConfigMap", "true")})
	if err != nil {
		t.Fatal(err)
	}
	if c1 != c2 {
		t.Fatal("equal probes must share a compiled Checker")
	}
	if _, err := cache.Checker([]v1alpha2.Probe{probe("", "ConfigMap", "(")}); failure.As(err) == nil {
		t.Fatalf("bad probe: err = %v, want a failure", err)
	}
	if cache.Len() != 1 {
		t.Fatalf("Len() = %d after a failed compile, want 1", cache.Len())
	}
	for i := range 3 {
		if _, err := cache.Checker([]v1alpha2.Probe{probe("", "ConfigMap", fmt.Sprintf("%d == %d", i, i))}); err != nil {
			t.Fatal(err)
		}
		if cache.Len() > 2 {
			t.Fatalf("Len() = %d, want at most 2", cache.Len())
		}
	}
}

func TestValueCost(t *testing.T) {
	tests := []struct {
		name string
		v    ref.Val
		want uint64
	}{
		{"scalar", types.Int(7), 1},
		{"short string", types.String("abc"), 2},
		{"long string", types.String(strings.Repeat("x", 1000)), 101},
		{"bytes", types.Bytes(make([]byte, 1000)), 101},
		// Comprehensions append to their result in place: lists and maps
		// cost one step, and sizeGuard bounds what one call builds.
		{"list", types.DefaultTypeAdapter.NativeToValue([]any{1, 2, 3}), 1},
		{"map", types.DefaultTypeAdapter.NativeToValue(map[string]any{"a": 1, "b": 2}), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := valueCost(tt.v); got != tt.want {
				t.Fatalf("valueCost() = %d, want %d", got, tt.want)
			}
		})
	}
}
