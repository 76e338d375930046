package health

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// Limits on user probes. The API already bounds an expression's length;
// the evaluation limits keep a pathological expression (a huge nested
// comprehension) from stalling the controller.
const (
	// maxExpressionLength is the longest CEL expression accepted, in bytes,
	// as in the API's validation of spec.healthChecks.probes[].cel.
	maxExpressionLength = 4096
	// costLimit is the cost one evaluation may spend (see meter), the
	// per-call limit Kubernetes uses for its own CEL. It is the
	// deterministic bound: an expression that exceeds it always fails.
	costLimit = 1_000_000
	// interruptCheckFrequency is how many comprehension iterations run
	// between checks of the evaluation's deadline.
	interruptCheckFrequency = 100
	// maxShownExpression is how much of an expression a default failure
	// message quotes.
	maxShownExpression = 80
)

// evalTimeout bounds the wall-clock time of one evaluation. It is only a
// backstop for a starved process: costLimit is normally reached well
// before it. A variable so that tests can shorten it.
var evalTimeout = 5 * time.Second

// probeEnv is the environment probes compile in, `self` being the object
// as a dynamic map, and the program option that guards its size-building
// functions (see sizeGuard). Both are safe for concurrent use.
type probeEnv struct {
	env   *cel.Env
	guard cel.ProgramOption
}

// celEnv returns the probe environment, built once.
var celEnv = sync.OnceValues(func() (probeEnv, error) {
	env, err := cel.NewEnv(
		cel.Variable("self", cel.DynType),
		cel.OptionalTypes(),
		cel.CrossTypeNumericComparisons(true),
		ext.Strings(),
	)
	if err != nil {
		return probeEnv{}, err
	}
	guard, err := sizeGuard(env)
	if err != nil {
		return probeEnv{}, fmt.Errorf("guarding CEL functions: %w", err)
	}
	return probeEnv{env: env, guard: guard}, nil
})

// userProbe is a compiled user probe.
type userProbe struct {
	index   int
	sel     v1alpha2.ProbeSelector
	expr    string
	message string
	prog    cel.Program
}

// compileProbe compiles the i-th probe of a spec.
func compileProbe(i int, p v1alpha2.Probe) (*userProbe, error) {
	if p.Selector.Kind == "" {
		return nil, failure.New(v1alpha2.ReasonInvalidConfig, "health probe %d: selector.kind is required", i)
	}
	if len(p.CEL) > maxExpressionLength {
		return nil, failure.New(v1alpha2.ReasonInvalidConfig,
			"health probe %d: expression is %d bytes, longer than %d", i, len(p.CEL), maxExpressionLength)
	}
	pe, err := celEnv()
	if err != nil {
		return nil, fmt.Errorf("creating CEL environment: %w", err)
	}
	env := pe.env
	ast, iss := env.Compile(p.CEL)
	if iss.Err() != nil {
		return nil, failure.New(v1alpha2.ReasonInvalidConfig, "health probe %d: compiling %q: %v", i, p.CEL, iss.Err())
	}
	// `self` is dynamic, so `self.status.ready` has type dyn and is only
	// known to be a bool when evaluated; anything else cannot be a bool.
	if t := ast.OutputType(); !t.IsExactType(types.BoolType) && !t.IsExactType(types.DynType) {
		return nil, failure.New(v1alpha2.ReasonInvalidConfig,
			"health probe %d: expression %q returns %s, want bool", i, p.CEL, t)
	}
	if err := checkCost(env, ast, i, p); err != nil {
		return nil, err
	}
	prog, err := env.Program(ast,
		pe.guard,
		metering(),
		cel.InterruptCheckFrequency(interruptCheckFrequency),
	)
	if err != nil {
		return nil, failure.New(v1alpha2.ReasonInvalidConfig, "health probe %d: building %q: %v", i, p.CEL, err)
	}
	return &userProbe{index: i, sel: p.Selector, expr: p.CEL, message: p.Message, prog: prog}, nil
}

// matches reports whether the probe selects obj.
func (p *userProbe) matches(obj *unstructured.Unstructured) bool {
	gk := obj.GroupVersionKind().GroupKind()
	if gk.Group != p.sel.Group || gk.Kind != p.sel.Kind {
		return false
	}
	if p.sel.Name != "" && obj.GetName() != p.sel.Name {
		return false
	}
	labels := obj.GetLabels()
	for k, v := range p.sel.MatchLabels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// eval runs the probe's expression on obj.
func (p *userProbe) eval(obj *unstructured.Unstructured) Result {
	ctx, cancel := context.WithTimeout(context.Background(), evalTimeout)
	defer cancel()
	m := &meter{limit: costLimit}
	out, _, err := p.prog.ContextEval(ctx, map[string]any{"self": obj.Object, meterVar: m})
	if err != nil {
		return unhealthy("probe %d: %v", p.index, err)
	}
	ok, isBool := out.Value().(bool)
	if !isBool {
		return unhealthy("probe %d: expression returned %s, want bool", p.index, out.Type().TypeName())
	}
	if ok {
		return healthy()
	}
	if p.message != "" {
		return unhealthy("%s", p.message)
	}
	return unhealthy("probe %d: %s is false", p.index, shorten(p.expr, maxShownExpression))
}

// shorten cuts s to at most n runes, marking the cut.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
