package health

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// intField returns the integer at path in obj. JSON numbers decode as int64
// in unstructured objects, but objects built by hand or decoded elsewhere
// may carry other numeric types, so those are accepted too.
func intField(obj map[string]any, path ...string) (int64, bool) {
	v, found, err := unstructured.NestedFieldNoCopy(obj, path...)
	if err != nil || !found {
		return 0, false
	}
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case int32:
		return int64(n), true
	case float64:
		return int64(n), true
	default:
		return 0, false
	}
}

// intFieldOr returns the integer at path in obj, or def when it is missing.
func intFieldOr(obj map[string]any, def int64, path ...string) int64 {
	if n, ok := intField(obj, path...); ok {
		return n
	}
	return def
}

// stringField returns the string at path in obj, or "".
func stringField(obj map[string]any, path ...string) string {
	s, _, _ := unstructured.NestedString(obj, path...)
	return s
}

// boolField returns the bool at path in obj, or false.
func boolField(obj map[string]any, path ...string) bool {
	b, _, _ := unstructured.NestedBool(obj, path...)
	return b
}

// condition is one entry of status.conditions.
type condition struct {
	Type, Status, Reason, Message string
	// ObservedGeneration is 0 when the condition does not report it.
	ObservedGeneration int64
}

// findCondition returns the status.conditions entry of type t.
func findCondition(obj *unstructured.Unstructured, t string) (condition, bool) {
	list, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok || stringField(m, "type") != t {
			continue
		}
		return condition{
			Type:               t,
			Status:             stringField(m, "status"),
			Reason:             stringField(m, "reason"),
			Message:            stringField(m, "message"),
			ObservedGeneration: intFieldOr(m, 0, "observedGeneration"),
		}, true
	}
	return condition{}, false
}

// stale returns why c cannot be trusted for obj's current generation, or ""
// when it can.
func (c condition) stale(obj *unstructured.Unstructured) string {
	gen := obj.GetGeneration()
	if c.ObservedGeneration == 0 || c.ObservedGeneration >= gen {
		return ""
	}
	return fmt.Sprintf("rollout of generation %d not observed (condition %s is for generation %d)",
		gen, c.Type, c.ObservedGeneration)
}

// describe formats a condition that is not in the wanted state.
func (c condition) describe() string {
	detail := c.Message
	if detail == "" {
		detail = c.Reason
	}
	if detail == "" {
		return fmt.Sprintf("condition %s is %s", c.Type, c.Status)
	}
	return fmt.Sprintf("condition %s is %s: %s", c.Type, c.Status, detail)
}

// conditionTrue requires condition t of obj to be reported, current and
// True.
func conditionTrue(obj *unstructured.Unstructured, t string) Result {
	c, ok := findCondition(obj, t)
	if !ok {
		return unhealthy("condition %s not reported", t)
	}
	if s := c.stale(obj); s != "" {
		return unhealthy("%s", s)
	}
	if c.Status != "True" {
		return unhealthy("%s", c.describe())
	}
	return healthy()
}

// generationObserved reports whether status.observedGeneration has caught
// up with metadata.generation. When required is false, an object that does
// not report status.observedGeneration is taken as observed.
func generationObserved(obj *unstructured.Unstructured, required bool) Result {
	gen := obj.GetGeneration()
	observed, ok := intField(obj.Object, "status", "observedGeneration")
	if !ok && !required {
		return healthy()
	}
	if gen > 0 && observed < gen {
		return unhealthy("rollout of generation %d not observed", gen)
	}
	return healthy()
}
