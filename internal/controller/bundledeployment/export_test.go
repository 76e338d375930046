package bundledeployment

// Internals the package's external tests use.
var ReadForHealth = readForHealth

// Thresholds of ReadForHealth.
const (
	ListAtLeast = listAtLeast
	ListPage    = listPage
)
