package bundledeployment

import (
	"time"
)

// The backoff of retries of a revision that failed for a reason the world
// can fix (failure.Retry): the first after retryBase, doubled at every
// retry up to retryMax.
const (
	retryBase = time.Second
	retryMax  = 2 * time.Minute
)

// retryKey names the retries of one revision of a BundleDeployment (see
// memory.retries).
type retryKey struct {
	name, revision string
}
