package crdsafety

import (
	"encoding/json"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// compareBounds reports numeric, length, item-count and property-count
// limits that the new schema tightens.
func (w *walker) compareBounds(path string, o, n *apiextensionsv1.JSONSchemaProps) {
	if maximumTightened(o.Maximum, o.ExclusiveMaximum, n.Maximum, n.ExclusiveMaximum) {
		w.add(path, RuleMaximumTightened, "maximum tightened from %s to %s",
			numberBound(o.Maximum, o.ExclusiveMaximum), numberBound(n.Maximum, n.ExclusiveMaximum))
	}
	if minimumTightened(o.Minimum, o.ExclusiveMinimum, n.Minimum, n.ExclusiveMinimum) {
		w.add(path, RuleMinimumTightened, "minimum tightened from %s to %s",
			numberBound(o.Minimum, o.ExclusiveMinimum), numberBound(n.Minimum, n.ExclusiveMinimum))
	}
	for _, b := range []struct {
		name     string
		rule     Rule
		old, new *int64
		isMax    bool
	}{
		{"maxLength", RuleMaxLengthTightened, o.MaxLength, n.MaxLength, true},
		{"minLength", RuleMinLengthTightened, o.MinLength, n.MinLength, false},
		{"maxItems", RuleMaxItemsTightened, o.MaxItems, n.MaxItems, true},
		{"minItems", RuleMinItemsTightened, o.MinItems, n.MinItems, false},
		{"maxProperties", RuleMaxPropertiesTightened, o.MaxProperties, n.MaxProperties, true},
		{"minProperties", RuleMinPropertiesTightened, o.MinProperties, n.MinProperties, false},
	} {
		if countTightened(b.old, b.new, b.isMax) {
			w.add(path, b.rule, "%s tightened from %s to %s", b.name, countBound(b.old), countBound(b.new))
		}
	}
}

// maximumTightened reports whether the new maximum rejects a value the old
// one allowed.
func maximumTightened(oldV *float64, oldEx bool, newV *float64, newEx bool) bool {
	switch {
	case newV == nil:
		return false
	case oldV == nil:
		return true
	}
	return *newV < *oldV || (*newV == *oldV && newEx && !oldEx)
}

// minimumTightened reports whether the new minimum rejects a value the old
// one allowed.
func minimumTightened(oldV *float64, oldEx bool, newV *float64, newEx bool) bool {
	switch {
	case newV == nil:
		return false
	case oldV == nil:
		return true
	}
	return *newV > *oldV || (*newV == *oldV && newEx && !oldEx)
}

// countTightened reports whether a non-negative count limit got stricter;
// an absent minimum counts as 0 and an absent maximum as unbounded.
func countTightened(oldV, newV *int64, isMax bool) bool {
	if newV == nil {
		return false
	}
	if isMax {
		return oldV == nil || *newV < *oldV
	}
	var oldMin int64
	if oldV != nil {
		oldMin = *oldV
	}
	return *newV > oldMin
}

// numberBound renders a minimum or maximum for messages.
func numberBound(v *float64, exclusive bool) string {
	if v == nil {
		return "none"
	}
	s := strconv.FormatFloat(*v, 'g', -1, 64)
	if exclusive {
		s += " (exclusive)"
	}
	return s
}

// countBound renders a length or count limit for messages.
func countBound(v *int64) string {
	if v == nil {
		return "none"
	}
	return strconv.FormatInt(*v, 10)
}

// enumValues renders enum values as canonical JSON so that equal values
// compare equal whatever their original spelling.
func enumValues(enum []apiextensionsv1.JSON) []string {
	out := make([]string, 0, len(enum))
	for _, e := range enum {
		out = append(out, canonicalJSON(e.Raw))
	}
	return out
}

// canonicalJSON re-encodes raw JSON (sorted keys, normalised numbers and
// whitespace); invalid JSON is returned unchanged.
func canonicalJSON(raw []byte) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return string(raw)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
