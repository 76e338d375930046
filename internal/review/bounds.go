package review

import (
	"fmt"
	"math"
	"slices"
	"unicode/utf8"
)

// Bounds of a stored review; the kubebuilder markers of
// v1alpha2.RevisionReview say the same.
const (
	// MaxEntries is how many entries each list of a review keeps (added,
	// changed and removed objects, gained and lost rules, webhooks,
	// APIServices, CRDs, cluster-scoped objects, Namespaces, identity
	// rules); the counts beside them are exact.
	MaxEntries = 50
	// MaxPaths is how many changed field paths an object keeps.
	MaxPaths = 16
	// MaxDetails is how many details a webhook, APIService or CRD keeps.
	MaxDetails = 8
	// MaxRuleItems is how many verbs, apiGroups, resources, resourceNames
	// or nonResourceURLs a stored rule keeps (it is marked truncated when
	// one is cut).
	MaxRuleItems = 16
	// MaxAtoms is how many rule atoms (apiGroup × resource × verb ×
	// resourceName) a review may hold in all, roles and subjects of both
	// sides together: more is a *TooLargeError rather than an unbounded
	// computation, found before anything is expanded when the rules the
	// revisions ship say so (estimate). A review at the limit allocates
	// about 50 MiB in all, and holds less (TestReviewCostAtTheLimit).
	MaxAtoms = 1 << 15
)

// String bounds, in bytes (so in characters too).
const (
	maxName    = 253
	maxShort   = 63
	maxPath    = 256
	maxDetail  = 256
	maxSummary = 1024
)

// ellipsis marks a cut string.
const ellipsis = "…"

// first returns at most n first elements of s.
func first[T any](s []T, n int) []T {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// firstAndMore returns ss if it has at most n entries, else its first n-1
// and "and N more".
func firstAndMore(ss []string, n int) []string {
	if len(ss) <= n {
		return ss
	}
	return append(slices.Clone(ss[:n-1]), fmt.Sprintf("and %d more", len(ss)-n+1))
}

// cut returns s cut to at most n bytes on a rune boundary, ending in an
// ellipsis when cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	end := n - len(ellipsis)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + ellipsis
}

// cutAll cuts every string of ss to n bytes, in a new slice.
func cutAll(ss []string, n int) []string {
	if len(ss) == 0 {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = cut(s, n)
	}
	return out
}

// count returns n as an int32, saturated.
func count(n int) int32 {
	if n > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(n)
}
