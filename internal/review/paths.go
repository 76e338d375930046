package review

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
)

// plainKey is a map key written as .key in a path; any other is ['key'].
var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// changedPaths returns the paths of the fields that differ between before
// and after. With restrict, only fields after sets are compared (before
// is a live object with fields others set); otherwise fields either sets
// are. Lists of objects that all have a distinct string name are matched
// by name ([name=x]), other lists by index. Paths name fields, never
// values (a list element's name aside).
func changedPaths(before, after map[string]any, restrict bool) []string {
	var out []string
	diffMaps("", before, after, restrict, &out)
	return out
}

// diffValue compares one field.
func diffValue(path string, before, after any, restrict bool, out *[]string) {
	switch a := after.(type) {
	case map[string]any:
		if b, ok := before.(map[string]any); ok {
			diffMaps(path, b, a, restrict, out)
			return
		}
	case []any:
		if b, ok := before.([]any); ok {
			diffLists(path, b, a, restrict, out)
			return
		}
	default:
		if scalarEqual(before, after) {
			return
		}
	}
	*out = append(*out, path)
}

// diffMaps compares two objects field by field, in key order.
func diffMaps(path string, before, after map[string]any, restrict bool, out *[]string) {
	keys := make([]string, 0, len(after)+len(before))
	for k := range after {
		keys = append(keys, k)
	}
	if !restrict {
		for k := range before {
			if _, ok := after[k]; !ok {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		b, inBefore := before[k]
		a, inAfter := after[k]
		p := join(path, k)
		if !inBefore || !inAfter {
			*out = append(*out, p)
			continue
		}
		diffValue(p, b, a, restrict, out)
	}
}

// diffLists compares two lists: by name when every element of both is an
// object with a distinct name, else by index. With restrict, elements of
// before that after does not name are not compared, and lists of
// different lengths matched by index are one change.
func diffLists(path string, before, after []any, restrict bool, out *[]string) {
	bn, bok := byName(before)
	an, aok := byName(after)
	if bok && aok {
		names := make([]string, 0, len(an)+len(bn))
		for _, e := range after {
			names = append(names, nameOf(e))
		}
		if !restrict {
			for _, e := range before {
				if _, ok := an[nameOf(e)]; !ok {
					names = append(names, nameOf(e))
				}
			}
		}
		for _, n := range names {
			p := fmt.Sprintf("%s[name=%s]", path, n)
			b, inBefore := bn[n]
			a, inAfter := an[n]
			if !inBefore || !inAfter {
				*out = append(*out, p)
				continue
			}
			diffValue(p, b, a, restrict, out)
		}
		return
	}
	if restrict && len(before) != len(after) {
		*out = append(*out, path)
		return
	}
	for i := range max(len(before), len(after)) {
		p := fmt.Sprintf("%s[%d]", path, i)
		if i >= len(before) || i >= len(after) {
			*out = append(*out, p)
			continue
		}
		diffValue(p, before[i], after[i], restrict, out)
	}
}

// byName indexes a list of objects by their name field; ok is false when
// the list is empty or an element has no string name or a name twice.
func byName(list []any) (map[string]any, bool) {
	if len(list) == 0 {
		return nil, false
	}
	m := make(map[string]any, len(list))
	for _, e := range list {
		n := nameOf(e)
		if n == "" {
			return nil, false
		}
		if _, dup := m[n]; dup {
			return nil, false
		}
		m[n] = e
	}
	return m, true
}

// nameOf returns the name field of a list element, or "".
func nameOf(e any) string {
	m, ok := e.(map[string]any)
	if !ok {
		return ""
	}
	n, _ := m["name"].(string)
	return n
}

// join appends field k to path.
func join(path, k string) string {
	if !plainKey.MatchString(k) {
		return fmt.Sprintf("%s['%s']", path, k)
	}
	if path == "" {
		return k
	}
	return path + "." + k
}

// scalarEqual compares two JSON scalars; numbers compare by value, so an
// int64 from YAML equals a float64 from JSON.
func scalarEqual(a, b any) bool {
	if fa, ok := number(a); ok {
		fb, ok := number(b)
		return ok && fa == fb
	}
	return reflect.DeepEqual(a, b)
}

// number returns v as a float64 if it is a number.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	case float32:
		return float64(n), true
	}
	return 0, false
}
