// Package resolvecache shares the resolution of a floating source (an
// image tag, a range of tags, a git branch or range, an HTTP URL without
// sha256, a Helm repository's chart range) among every BundleDeployment
// that names the same source with the same credentials: a thousand
// BundleDeployments that follow one repository make one lookup per
// interval, not a thousand.
//
// An entry is keyed by the source as written (every field, so also its
// TLS settings and what it verifies) and by the contents of every Secret
// and ConfigMap it names, so no entry answers for other credentials: a
// team whose Secret holds other credentials, or none, looks the source up
// itself. Entries answer for MaxAge (spec.pollInterval's minimum), after
// which the next caller looks the source up again; callers that ask while
// a lookup is under way wait for it instead of making their own. A lookup
// ended by its caller's context (a cancelled reconcile, a deadline) is
// not kept: the next caller makes its own.
package resolvecache
